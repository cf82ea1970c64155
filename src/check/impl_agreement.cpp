#include "impl_agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "generator.h"
#include "numeric.h"
#include "row_reference.h"

namespace dcp {
namespace {

constexpr size_t kMaxReported = 8;  // as RankCaseResult::first_mismatches
constexpr double kInf = std::numeric_limits<double>::infinity();

// Compares one run of calls and accumulates into `agreement` and `into`.
class Comparer {
 public:
  Comparer(const Case& c, const AgreementSpec& spec, RankCaseResult& into)
      : c_(c), spec_(spec), into_(into), f_(format_of(c.out_dtype)) {
    agreement_.exact = spec.exact;
    source_ = spec.exact ? fmt::format("kernel '{}' and --against '{}' differ (--against-exact: "
                                       "bit for bit)",
                                       spec.kernel, spec.against)
                         : fmt::format("kernel '{}' and --against '{}' disagree beyond the "
                                       "reference tolerance",
                                       spec.kernel, spec.against);
  }

  // The same calls, in the same order; a call missing on one side fails.
  Agreement compare(const std::vector<KeptCall>& kernel, const std::vector<KeptCall>& against);

 private:
  void compare_call(const KeptCall& a, const KeptCall& b);
  // A call missing on one side or of another size: one element beyond any bound.
  void size_mismatch(AgreementCounts& counts, int op, double got, double want);
  void compare_row(const Case& k, const KeptCall& a, const KeptCall& b, int t, int h);
  void note(AgreementCounts& counts, Format f, int op, int t, int h, int dim, uint32_t x,
            uint32_t y, double bound);

  const Case& c_;
  const AgreementSpec& spec_;
  RankCaseResult& into_;
  Format f_;
  std::string source_;
  Agreement agreement_;
  std::optional<OpGenerator> gen_;  // the current call's, made when a row needs the reference
  RowReference row_;
};

void Comparer::note(AgreementCounts& counts, Format f, int op, int t, int h, int dim, uint32_t x,
                    uint32_t y, double bound) {
  ++counts.num_differing;
  const double a = decode(f, x), b = decode(f, y);
  const double ulps = ulp_distance(f, x, y);
  // Exact: every differing bit (+0 vs -0 too) is beyond; NaN never agrees.
  const bool beyond = spec_.exact || std::isnan(a) || std::isnan(b) || !(std::fabs(a - b) <= bound);
  const bool new_max = !counts.max_at || ulps > counts.max_ulps;
  if (!beyond && !new_max) return;
  Mismatch m;
  m.rank = spec_.global_rank;
  m.op_idx = op;
  m.token = t;
  m.head = h;
  m.dim = dim;
  m.got = b;
  m.want = a;
  m.err_ulps = ulps;
  const double ulp = std::isfinite(a) ? ulp_of(f, std::fabs(a)) : 1.0;
  m.tolerance_ulps = spec_.exact ? 0 : bound / ulp;
  m.likely_source = source_;
  if (new_max) {
    counts.max_ulps = ulps;
    counts.max_at = m;
  }
  if (!beyond) return;
  ++counts.num_beyond;
  if (into_.first_mismatches.size() < kMaxReported) into_.first_mismatches.push_back(std::move(m));
}

void Comparer::size_mismatch(AgreementCounts& counts, int op, double got, double want) {
  ++counts.num_differing;
  ++counts.num_beyond;
  Mismatch m;
  m.rank = spec_.global_rank;
  m.op_idx = op;
  m.got = got;  // sizes, in bytes or calls
  m.want = want;
  m.err_ulps = kInf;
  m.likely_source = source_ + ": the sizes differ";
  if (!counts.max_at || counts.max_ulps < kInf) {
    counts.max_ulps = kInf;
    counts.max_at = m;
  }
  if (into_.first_mismatches.size() < kMaxReported) into_.first_mismatches.push_back(std::move(m));
}

// Row (t, h) of call `k`: output elements, then the combined LSE. Only a row
// with a differing bit reaches here; the reference is built for it alone.
void Comparer::compare_row(const Case& k, const KeptCall& a, const KeptCall& b, int t, int h) {
  const int H = k.geometry.heads_per_rank, D = k.geometry.head_dim;
  const size_t row = static_cast<size_t>(t) * H + h;
  const int head = spec_.group_rank * H + h;  // this rank owns heads [r*H, (r+1)*H)
  const bool tolerant = !spec_.exact;
  if (tolerant) {
    if (!gen_) gen_.emplace(k, spec_.group_idx, a.op_idx);
    row_weights(k, *gen_, t, head, row_);
  }
  const size_t elem = static_cast<size_t>(format_bytes(f_));
  if (std::memcmp(a.output.data() + row * D * elem, b.output.data() + row * D * elem,
                  D * elem) != 0) {
    if (tolerant) row_values(k, *gen_, t, head, spec_.upstream, row_);
    for (int d = 0; d < D; ++d) {
      const size_t i = row * D + static_cast<size_t>(d);
      const uint32_t x = read_bits(f_, a.output.data(), i), y = read_bits(f_, b.output.data(), i);
      if (x == y) continue;
      // Each kernel may sit the checker's bound away from the reference, on either side.
      const double bound =
          tolerant ? 2 * row_element_tolerance(k, row_, static_cast<size_t>(d), spec_.upstream)
                   : 0;
      note(agreement_.output, f_, a.op_idx, t, h, d, x, y, bound);
    }
  }
  if (a.lse.empty() || b.lse.empty()) return;
  const uint32_t x = read_bits(Format::kFp32, a.lse.data(), row);
  const uint32_t y = read_bits(Format::kFp32, b.lse.data(), row);
  if (x == y) return;
  // dim -1: the row's combined LSE, as the checker reports it.
  const double bound = tolerant ? 2 * row_lse_bound(k, row_.weights).tol : 0;
  note(agreement_.lse, Format::kFp32, a.op_idx, t, h, -1, x, y, bound);
}

void Comparer::compare_call(const KeptCall& a, const KeptCall& b) {
  Case k = c_;
  k.num_tokens = a.num_tokens;
  const int H = k.geometry.heads_per_rank, D = k.geometry.head_dim;
  const size_t rows = static_cast<size_t>(k.num_tokens) * H;
  const size_t out_bytes = rows * D * format_bytes(f_);
  const bool with_lse = !a.lse.empty() && !b.lse.empty();
  if (a.op_idx != b.op_idx || b.num_tokens != a.num_tokens || a.output.size() != out_bytes ||
      b.output.size() != out_bytes) {
    size_mismatch(agreement_.output, a.op_idx, static_cast<double>(b.output.size()),
                  static_cast<double>(a.output.size()));
    return;
  }
  if (with_lse && (a.lse.size() != rows * sizeof(float) || b.lse.size() != a.lse.size())) {
    size_mismatch(agreement_.lse, a.op_idx, static_cast<double>(b.lse.size()),
                  static_cast<double>(a.lse.size()));
    return;
  }
  agreement_.output.num_compared += static_cast<int64_t>(rows) * D;
  if (with_lse) agreement_.lse.num_compared += static_cast<int64_t>(rows);
  if (a.output == b.output && (!with_lse || a.lse == b.lse)) return;
  gen_.reset();
  const size_t row_bytes = D * static_cast<size_t>(format_bytes(f_));
  for (size_t r = 0; r < rows; ++r) {
    const bool out_same =
        std::memcmp(a.output.data() + r * row_bytes, b.output.data() + r * row_bytes,
                    row_bytes) == 0;
    const bool lse_same = !with_lse || std::memcmp(a.lse.data() + r * sizeof(float),
                                                   b.lse.data() + r * sizeof(float),
                                                   sizeof(float)) == 0;
    if (out_same && lse_same) continue;
    compare_row(k, a, b, static_cast<int>(r / H), static_cast<int>(r % H));
  }
}

Agreement Comparer::compare(const std::vector<KeptCall>& kernel,
                            const std::vector<KeptCall>& against) {
  const size_t common = std::min(kernel.size(), against.size());
  for (size_t i = 0; i < common; ++i) compare_call(kernel[i], against[i]);
  if (kernel.size() != against.size()) {
    size_mismatch(agreement_.output, static_cast<int>(common), static_cast<double>(against.size()),
                  static_cast<double>(kernel.size()));
  }
  return std::move(agreement_);
}

}  // namespace

double ulp_distance(Format f, uint32_t a, uint32_t b) {
  if (std::isnan(decode(f, a)) || std::isnan(decode(f, b))) return kInf;
  const uint32_t sign = format_bytes(f) == 2 ? 0x8000u : 0x80000000u;
  // Sign and magnitude onto one ordered integer line (+0 and -0 both at 0).
  auto key = [sign](uint32_t x) {
    const int64_t mag = x & (sign - 1);
    return (x & sign) != 0 ? -mag : mag;
  };
  return static_cast<double>(std::llabs(key(a) - key(b)));
}

Agreement check_impls_agree(const Case& c, const std::vector<KeptCall>& kernel,
                            const std::vector<KeptCall>& against, const AgreementSpec& spec,
                            RankCaseResult& into) {
  Agreement out = Comparer(c, spec, into).compare(kernel, against);
  const int64_t beyond = out.output.num_beyond + out.lse.num_beyond;
  if (beyond > 0) {
    into.passed = false;
    into.num_mismatches += beyond;
  }
  into.agreement = out;
  return out;
}

}  // namespace dcp
