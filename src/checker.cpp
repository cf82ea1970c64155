// Element-by-element check of one call's output against the float64 reference.
//
// Tolerance. The kernel evaluates the combine in fp32 and rounds once to the
// output dtype, so with y the exact (float64) result and y32 the kernel's fp32
// value, |got - y| <= |got - y32| + |y32 - y| <= 0.5 ulp_out(|y| + e32) + e32,
// where e32 bounds |y32 - y|. With u = 2^-24 (fp32 unit roundoff),
// S = sum_s w_s |x_s| and L = max over contributing sources of |l2_s|, plus |m|:
//   - l2_s = lse_s * log2(e) (base e): the rounded constant and the product,
//     <= 2u |l2_s|; the same for m (it is one of them); d_s = l2_s - m adds
//     u |d_s|. So the exponent is off by <= 3u L.
//   - e_s = exp2f(d_s): relative error <= ln2 * 3u L + 4u (exp2f is within 2
//     ulp, ex2.approx similar) = a.
//   - sum of W positive terms: (W - 1) u relative; the division: u. A weight
//     is therefore relatively off by <= 2a + W u (numerator and sum both
//     carry a).
//   - W fused multiply-adds: <= W u S.
//   First order: |y32 - y| <= u S (2W + 8 + 4.2 L). We take twice that,
//   e32 = u S (4W + 16 + 9 L) + 2^-100, to cover second-order terms and other
//   valid fp32 orderings (sum of e_s x_s divided once, online rescaling), and
//   an absolute 2^-100 for weights that flush to zero (< 2^-126: any term
//   lost that way is < 2^-126 |x_s|). For typical rows (W = 4, L ~ 40, S ~ 1)
//   e32 ~ 2e-5, far below half an ulp of bf16 (2e-3) and of fp16 (2.4e-4)
//   near 1: the bound is about half an ulp, >= 10x tighter than the upstream
//   test's rtol = atol = 3e-2, and a 2-ulp error fails.
//
// A row whose sources are all masked or -inf must be exactly zero (+0 or -0).
// NaN never passes. The upstream profile instead compares with an fp32
// reference and |got - want| <= 3e-2 + 3e-2 |want| (NaN fails too).
#include "checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "combine_reference.h"
#include "errors.h"
#include "generator.h"
#include "numeric.h"

namespace dcp {
namespace {

constexpr double kU = 0x1p-24;
constexpr double kUpstreamTol = 3e-2;

// One (token, head) row: everything needed to judge and explain its elements.
struct RowReference {
  std::vector<SourceLse> lse;
  CombineWeights weights;
  std::vector<std::vector<double>> x;  // per source, D values (only sources read)
  std::vector<bool> loaded;
  std::vector<double> want, abs_sum;
  std::vector<float> want32;
};

LogBase log_base(LseBase b) { return b == LseBase::kE ? LogBase::kE : LogBase::k2; }

void build_row(const Case& c, const OpGenerator& gen, int token, int head, bool upstream,
               RowReference& r) {
  const int w = c.dcp_size, d_count = c.geometry.head_dim;
  r.lse.resize(static_cast<size_t>(w));
  for (int s = 0; s < w; ++s) {
    r.lse[static_cast<size_t>(s)] = {gen.lse_value(s, token, head), gen.row_masked(s, token)};
  }
  r.weights = combine_weights(r.lse, log_base(c.lse_base));
  r.x.resize(static_cast<size_t>(w));
  r.loaded.assign(static_cast<size_t>(w), false);
  std::vector<const double*> ptrs(static_cast<size_t>(w), nullptr);
  for (int s = 0; s < w; ++s) {
    const auto si = static_cast<size_t>(s);
    if (r.weights.weight[si] == 0) continue;  // never read: may be NaN garbage
    r.x[si].resize(static_cast<size_t>(d_count));
    gen.output_row(s, token, head, r.x[si].data());
    r.loaded[si] = true;
    ptrs[si] = r.x[si].data();
  }
  r.want.resize(static_cast<size_t>(d_count));
  r.abs_sum.resize(static_cast<size_t>(d_count));
  combine_values(r.weights, ptrs, d_count, r.want.data(), r.abs_sum.data());
  if (upstream) {
    r.want32.resize(static_cast<size_t>(d_count));
    combine_row_fp32(r.lse, log_base(c.lse_base), ptrs, d_count, r.want32.data());
  }
}

// Best explanation of a wrong value: a raw partial, the combine with one
// source dropped, the poison pattern, or a zero from a row wrongly treated as
// all-masked. "" when nothing fits.
std::string likely_source(const Case& c, const OpGenerator& gen, int token, int head, int dim,
                          RowReference& r, uint32_t got_bits, double got, double want, double tol) {
  const Format f = format_of(c.out_dtype);
  if (got_bits == all_ones_bits(f)) return "poison (unwritten)";
  if (std::isnan(got)) return "";
  const int w = c.dcp_size;
  const auto di = static_cast<size_t>(dim);
  std::vector<double> xs(static_cast<size_t>(w));
  for (int s = 0; s < w; ++s) {
    const auto si = static_cast<size_t>(s);
    if (!r.loaded[si]) {  // diagnostics only: zero-weight rows may be NaN garbage
      r.x[si].resize(static_cast<size_t>(c.geometry.head_dim));
      gen.output_row(s, token, head, r.x[si].data());
      r.loaded[si] = true;
    }
    xs[si] = r.x[si][di];
  }
  struct Candidate {
    double value;
    std::string name;
  };
  std::vector<Candidate> cands;
  for (int s = 0; s < w; ++s) {
    cands.push_back(
        {xs[static_cast<size_t>(s)], fmt::format("source {}'s partial, unweighted", s)});
  }
  for (int s = 0; s < w && w > 1; ++s) {
    const double rest = 1 - r.weights.weight[static_cast<size_t>(s)];
    if (r.weights.all_masked || r.weights.weight[static_cast<size_t>(s)] == 0 || rest <= 0) {
      continue;
    }
    double v = 0;
    for (int j = 0; j < w; ++j) {
      const double wj = r.weights.weight[static_cast<size_t>(j)];
      if (j != s && wj > 0) v += wj / rest * xs[static_cast<size_t>(j)];
    }
    cands.push_back({v, fmt::format("combine without source {}", s)});
  }
  if (got == 0 && r.want[di] != 0) cands.push_back({0.0, "zero (row treated as all-masked)"});
  std::string best;
  double best_dist = std::numeric_limits<double>::infinity();
  for (const Candidate& k : cands) {
    if (!std::isfinite(k.value)) continue;
    // A candidate explains `got` when got is what a correct fp32 kernel would
    // produce for it, and it is distinguishable from the right answer.
    if (std::fabs(k.value - want) <= tol) continue;
    const double dist = std::fabs(got - k.value);
    if (dist > element_tolerance(c.out_dtype, k.value, w, r.abs_sum[di], r.weights.lse_magnitude)) {
      continue;
    }
    if (dist < best_dist) {
      best_dist = dist;
      best = k.name;
    } else if (dist == best_dist) {
      best += " or " + k.name;
    }
  }
  return best;
}

}  // namespace

double fp32_error_bound(int num_sources, double abs_sum, double lse_magnitude) {
  return kU * abs_sum * (4.0 * num_sources + 16 + 9 * lse_magnitude) + 0x1p-100;
}

double element_tolerance(DType out, double want, int num_sources, double abs_sum,
                         double lse_magnitude) {
  const double e32 = fp32_error_bound(num_sources, abs_sum, lse_magnitude);
  return 0.5 * ulp_of(format_of(out), std::fabs(want) + e32) + e32;
}

CallCheck check_call_output(const Case& c, int group_idx, int group_rank, int global_rank,
                            int op_idx, const std::vector<uint8_t>& got,
                            const CheckProfile& profile, int max_reported) {
  const Format f = format_of(c.out_dtype);
  const int h_count = c.geometry.heads_per_rank, d_count = c.geometry.head_dim;
  const size_t expected =
      static_cast<size_t>(c.num_tokens) * h_count * d_count * static_cast<size_t>(format_bytes(f));
  DCP_CHECK(got.size() == expected, HarnessError,
            "output of op {} on rank {} has {} bytes, expected {} ([T={}, H={}, D={}] {})", op_idx,
            global_rank, got.size(), expected, c.num_tokens, h_count, d_count,
            to_string(c.out_dtype));
  const OpGenerator gen(c, group_idx, op_idx);
  CallCheck out;
  RowReference r;
  for (int t = 0; t < c.num_tokens; ++t) {
    for (int h = 0; h < h_count; ++h) {
      const int head = group_rank * h_count + h;  // this rank owns heads [r*H, (r+1)*H)
      build_row(c, gen, t, head, profile.upstream, r);
      const size_t base = (static_cast<size_t>(t) * h_count + h) * d_count;
      for (int d = 0; d < d_count; ++d) {
        const auto di = static_cast<size_t>(d);
        const uint32_t bits = read_bits(f, got.data(), base + di);
        const double g = decode(f, bits);
        const double want = profile.upstream ? r.want32[di] : r.want[di];
        double tol;
        if (r.weights.all_masked) {
          tol = 0;  // exactly zero; +0 and -0 both compare equal to 0
        } else if (profile.upstream) {
          tol = kUpstreamTol + kUpstreamTol * std::fabs(want);
        } else {
          tol = element_tolerance(c.out_dtype, want, c.dcp_size, r.abs_sum[di],
                                  r.weights.lse_magnitude);
        }
        ++out.num_checked;
        const bool is_nan = std::isnan(g);
        if (!is_nan && std::fabs(g - want) <= tol) continue;
        ++out.num_mismatches;
        if (is_nan) ++out.num_nan;
        if (static_cast<int>(out.first_mismatches.size()) >= max_reported) continue;
        const double ulp = ulp_of(f, want);
        Mismatch m;
        m.rank = global_rank;
        m.op_idx = op_idx;
        m.token = t;
        m.head = h;
        m.dim = d;
        m.got = g;
        m.want = want;
        m.err_ulps = is_nan ? std::numeric_limits<double>::infinity() : std::fabs(g - want) / ulp;
        m.tolerance_ulps = tol / ulp;
        m.likely_source = likely_source(c, gen, t, head, d, r, bits, g, want, tol);
        out.first_mismatches.push_back(std::move(m));
      }
    }
  }
  return out;
}

}  // namespace dcp
