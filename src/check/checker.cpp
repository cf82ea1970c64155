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
//
// Speed (one kimi call: T = 128, H = 16, D = 512, W = 4 sources read per
// row: 4M source values, 1M checked). Rows (token, head) are split into
// contiguous chunks across CheckProfile::num_threads threads; each chunk has
// its own scratch row (no allocation per row) and its own counts and first
// mismatches, merged in chunk order, so results do not depend on the thread
// count. A row of the strict profile is first judged by fused_row_passes():
// the sources' values are read from the value table (value_table.h, the
// generator's rows by construction), combined and tested in registers, N
// elements at a time (reference/simd.h). A row that passes is done; any
// other row, and every row of the upstream profile, is built (row_values:
// sources, float64 combine, fp32 combine) and judged by row_passes() in
// lanes, then, if some element fails, by the element-by-element loop of
// check_rows, which counts, reports and explains exactly as before. The
// lanes compute the same formulas with the same roundings, so a row passes
// in lanes exactly when every element passes that loop. This file is built
// with -ffp-contract=off: the lanes must round like the scalar formulas (no
// fused multiply-add in the AVX2/AVX-512 builds).
#include "checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <string>

#include "check_math.h"
#include "combine_reference.h"
#include "errors.h"
#include "generator.h"
#include "numeric.h"
#include "row_reference.h"
#include "simd.h"
#include "thread_pool.h"
#include "value_table.h"

namespace dcp {
namespace {

constexpr double kU = 0x1p-24;

// ---- row_passes: are all D elements of a row within tolerance? ----
//
// The same tests as check_rows' element loop, in lanes (simd.h): a row for
// which this returns true has no mismatch, and any other row is judged again
// element by element (so the lanes only need to be exact, never to report).
// Strict: e32 = kU * abs_sum * bound_scale + 2^-100 with bound_scale = 4 W +
// 16 + 9 L, as fp32_error_bound computes it, and tol = 0.5 ulp(|want| + e32)
// + e32 as in element_tolerance. Upstream: tol = 3e-2 + 3e-2 |want|. Zero
// (all-masked rows): tol = 0. Pass: got is not NaN and |got - want| <= tol.

enum class RowTol : uint8_t { kZero, kStrict, kUpstream };

template <Format F, int N>
DCP_SIMD_INLINE simd::vec<double, N> load_got(const uint8_t* p) {
  using namespace simd;
  static_assert(std::endian::native == std::endian::little, "outputs are little-endian bytes");
  using F64 = vec<double, N>;
  if constexpr (F == Format::kFp32) {
    return __builtin_convertvector(load<vec<float, N>>(p), F64);
  } else {
    const vec<uint32_t, N> b = __builtin_convertvector(load<vec<uint16_t, N>>(p), vec<uint32_t, N>);
    if constexpr (F == Format::kBf16) {
      return __builtin_convertvector(bf16_to_float(b), F64);
    } else {
      return __builtin_convertvector(fp16_to_float(b), F64);
    }
  }
}

template <Format F>
constexpr int kMantissa = F == Format::kFp16 ? 10 : F == Format::kBf16 ? 7 : 23;
template <Format F>
constexpr int kBias = F == Format::kFp16 ? 15 : 127;

// ulp_of(F, a) for a >= 0 or NaN, with floating-point comparisons only (the
// baseline has no 64-bit integer compare): clamping a to [2^(1 - bias),
// 2^bias] clamps its exponent to [1 - bias, bias] as ulp_of does (a NaN
// takes the low end, as there; infinity the high end), and the spacing is
// then 2^exponent * 2^-mantissa, exactly.
template <Format F, int N>
DCP_SIMD_INLINE simd::vec<double, N> ulp_lanes(const simd::vec<double, N>& magnitude) {
  using namespace simd;
  using F64 = vec<double, N>;
  using U64 = vec<uint64_t, N>;
  constexpr double lo = std::bit_cast<double>(static_cast<uint64_t>(1 - kBias<F> + 1023) << 52);
  constexpr double hi = std::bit_cast<double>(static_cast<uint64_t>(kBias<F> + 1023) << 52);
  F64 a = select(magnitude >= lo, magnitude, F64{} + lo);  // NaN fails >=: the low end
  a = select(a > hi, F64{} + hi, a);
  const F64 pow2 = bits<F64>(bits<U64>(a) & 0x7FF0000000000000ull);
  return pow2 * std::bit_cast<double>(static_cast<uint64_t>(1023 - kMantissa<F>) << 52);
}

template <Format F, RowTol T>
double scalar_tolerance(double want, double abs_sum, double bound_scale) {
  if constexpr (T == RowTol::kZero) {
    return 0;
  } else if constexpr (T == RowTol::kUpstream) {
    return kUpstreamTol + kUpstreamTol * std::fabs(want);
  } else {
    return check_math::element_tolerance(kMantissa<F>, kBias<F>, want, abs_sum, bound_scale);
  }
}

template <Format F, RowTol T, int N>
DCP_SIMD_INLINE bool row_passes_as(const uint8_t* got, const double* want, const double* abs_sum,
                                   int n, double bound_scale) {
  using namespace simd;
  using F64 = vec<double, N>;
  constexpr int kBytes = F == Format::kFp32 ? 4 : 2;
  using U64 = vec<uint64_t, N>;
  U64 bad{};
  int d = 0;
  for (; d + N <= n; d += N) {
    const F64 g = load_got<F, N>(got + static_cast<size_t>(d) * kBytes);
    const F64 w = load<F64>(want + d);
    F64 tol;
    if constexpr (T == RowTol::kZero) {
      tol = F64{};
    } else if constexpr (T == RowTol::kUpstream) {
      tol = kUpstreamTol + kUpstreamTol * simd::fabs(w);
    } else {
      const F64 e32 = kU * load<F64>(abs_sum + d) * bound_scale + 0x1p-100;
      tol = 0.5 * ulp_lanes<F, N>(simd::fabs(w) + e32) + e32;
    }
    // Comparisons become integer lanes before they are combined: GCC
    // scalarises a combination of raw vector comparisons here.
    bad |= ~(bits<U64>(g == g) & bits<U64>(simd::fabs(g - w) <= tol));
  }
  if (any(bad)) return false;
  for (; d < n; ++d) {
    const double g = decode(F, read_bits(F, got, static_cast<size_t>(d)));
    const double tol = scalar_tolerance<F, T>(want[d], abs_sum[d], bound_scale);
    if (std::isnan(g) || !(std::fabs(g - want[d]) <= tol)) return false;
  }
  return true;
}

template <Format F, int N>
DCP_SIMD_INLINE bool row_passes_in(RowTol t, const uint8_t* got, const double* want,
                                   const double* abs_sum, int n, double bound_scale) {
  switch (t) {
    case RowTol::kZero:
      return row_passes_as<F, RowTol::kZero, N>(got, want, abs_sum, n, bound_scale);
    case RowTol::kStrict:
      return row_passes_as<F, RowTol::kStrict, N>(got, want, abs_sum, n, bound_scale);
    case RowTol::kUpstream:
      return row_passes_as<F, RowTol::kUpstream, N>(got, want, abs_sum, n, bound_scale);
  }
  return false;
}

template <int N>
DCP_SIMD_INLINE bool row_passes_lanes(Format f, RowTol t, const uint8_t* got, const double* want,
                                      const double* abs_sum, int n, double bound_scale) {
  switch (f) {
    case Format::kFp16:
      return row_passes_in<Format::kFp16, N>(t, got, want, abs_sum, n, bound_scale);
    case Format::kBf16:
      return row_passes_in<Format::kBf16, N>(t, got, want, abs_sum, n, bound_scale);
    case Format::kFp32:
      return row_passes_in<Format::kFp32, N>(t, got, want, abs_sum, n, bound_scale);
  }
  return false;
}

DCP_SIMD_DISPATCH(bool, row_passes,
                  (Format f, RowTol t, const uint8_t* got, const double* want,
                   const double* abs_sum, int n, double bound_scale),
                  (f, t, got, want, abs_sum, n, bound_scale))

// ---- fused_row_passes: row_passes without materialising the row ----
//
// For the strict profile: the sources' values are read from the value table
// (value_table.h: what the generator's rows are, bit for bit), combined and
// tested N elements at a time in registers, never stored. Per element the
// arithmetic is that of row_values then row_passes: want and abs_sum summed
// from +0 in source order with one rounding per product and per sum, then
// the same tolerance and test. A row that fails, or that this cannot take (a
// source with weight > 0 whose row is not normal, more than kMaxFused
// sources, a row longer than the table's pad, a tail of fewer than N
// elements), is built and judged the ordinary way.

constexpr int kMaxFused = 16;

struct FusedRow {
  int count = 0;  // sources with weight > 0, in source order
  const float* values[kMaxFused];  // each source's row: value_table(f, k).values + offset
  double weight[kMaxFused];
};

template <Format F, RowTol T, int N>
DCP_SIMD_INLINE bool fused_row_passes_as(const FusedRow& row, const uint8_t* got, int n,
                                         double bound_scale) {
  using namespace simd;
  using U64 = vec<uint64_t, N>;
  using F64 = vec<double, N>;
  constexpr int kBytes = F == Format::kFp32 ? 4 : 2;
  if (n % N != 0 || n > static_cast<int>(kValueTablePad)) return false;
  F64 weight[kMaxFused];
  for (int j = 0; j < row.count; ++j) weight[j] = F64{} + row.weight[j];
  U64 bad{};
  for (int d = 0; d < n; d += N) {
    F64 want{}, abs_sum{};
    for (int j = 0; j < row.count; ++j) {
      const F64 x = __builtin_convertvector(load<vec<float, N>>(row.values[j] + d), F64);
      want = want + weight[j] * x;
      if constexpr (T == RowTol::kStrict) abs_sum = abs_sum + weight[j] * simd::fabs(x);
    }
    const F64 g = load_got<F, N>(got + static_cast<size_t>(d) * kBytes);
    F64 tol;
    if constexpr (T == RowTol::kZero) {
      tol = F64{};
    } else {
      const F64 e32 = kU * abs_sum * bound_scale + 0x1p-100;
      tol = 0.5 * ulp_lanes<F, N>(simd::fabs(want) + e32) + e32;
    }
    bad |= ~(bits<U64>(g == g) & bits<U64>(simd::fabs(g - want) <= tol));
  }
  return !any(bad);
}

template <int N>
DCP_SIMD_INLINE bool fused_row_passes_lanes(Format f, bool all_masked, const FusedRow& row,
                                            const uint8_t* got, int n, double bound_scale) {
  constexpr RowTol kZ = RowTol::kZero, kS = RowTol::kStrict;
  switch (f) {
    case Format::kFp16:
      return all_masked ? fused_row_passes_as<Format::kFp16, kZ, N>(row, got, n, bound_scale)
                        : fused_row_passes_as<Format::kFp16, kS, N>(row, got, n, bound_scale);
    case Format::kBf16:
      return all_masked ? fused_row_passes_as<Format::kBf16, kZ, N>(row, got, n, bound_scale)
                        : fused_row_passes_as<Format::kBf16, kS, N>(row, got, n, bound_scale);
    case Format::kFp32:
      return all_masked ? fused_row_passes_as<Format::kFp32, kZ, N>(row, got, n, bound_scale)
                        : fused_row_passes_as<Format::kFp32, kS, N>(row, got, n, bound_scale);
  }
  return false;
}

DCP_SIMD_DISPATCH(bool, fused_row_passes,
                  (Format f, bool all_masked, const FusedRow& row, const uint8_t* got, int n,
                   double bound_scale),
                  (f, all_masked, row, got, n, bound_scale))

// The fused row's sources, or false when the row must be built instead.
bool fused_sources(const Case& c, const OpGenerator& gen, int token, int head,
                   const CombineWeights& w, FusedRow& row) {
  row.count = 0;
  if (w.all_masked) return true;  // no source is read: want is 0
  for (int s = 0; s < c.dcp_size; ++s) {
    const double ws = w.weight[static_cast<size_t>(s)];
    if (ws == 0) continue;
    const RowStream r = gen.row_stream(s, token, head);
    if (!r.normal || row.count == kMaxFused) return false;
    row.values[row.count] =
        value_table(format_of(c.out_dtype), r.draw.scale_k).values + r.draw.offset;
    row.weight[row.count] = ws;
    ++row.count;
  }
  return true;
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
  return check_math::fp32_error_bound(abs_sum,
                                      check_math::bound_scale(num_sources, lse_magnitude));
}

double element_tolerance(DType out, double want, int num_sources, double abs_sum,
                         double lse_magnitude) {
  const Format f = format_of(out);
  return check_math::element_tolerance(format_mantissa_bits(f), f == Format::kFp16 ? 15 : 127,
                                       want, abs_sum,
                                       check_math::bound_scale(num_sources, lse_magnitude));
}

// The combined LSE's bound. The kernel computes in fp32: each source's l2 (one
// rounding of lse * log2 e: 0.5 ulp of |l2|), m (exact), 2^(l2 - m) (the
// subtraction and exp2f, a few ulp, scaled by ln 2 <= 1), the sum (one
// rounding per source), log2f(sum) (a few ulp of a value <= log2 W + 1),
// m + log2(sum) (0.5 ulp of |want|) and, for base e, one multiply (0.5 ulp).
// Every term is a few units of eps32 times |l2|, W or |want|, so twice the
// sum of those scales, in eps32 = 2^-23, bounds it with room to spare.
double combined_lse_tolerance(double want, int num_sources, double lse_magnitude) {
  return check_math::combined_lse_tolerance(want, num_sources, lse_magnitude);
}

double reference_combined_lse(const CombineWeights& w, LseBase base) {
  return check_math::combined_lse(static_cast<int>(w.l2.size()), w.l2.data(), w.max_l2,
                                  !w.all_masked, base == LseBase::kE);
}

namespace {

// A reported mismatch; `ulp` is one unit at `want` in the compared format
// (infinite error for a NaN or an infinite difference).
Mismatch make_mismatch(int global_rank, int op_idx, int t, int h, int dim, double got, double want,
                       double tol, double ulp) {
  Mismatch m;
  m.rank = global_rank;
  m.op_idx = op_idx;
  m.token = t;
  m.head = h;
  m.dim = dim;
  m.got = got;
  m.want = want;
  m.err_ulps = std::isfinite(got - want) ? std::fabs(got - want) / ulp
                                         : std::numeric_limits<double>::infinity();
  m.tolerance_ulps = tol / ulp;
  return m;
}

// One row's combined LSE (CheckProfile::combined_lse), given the row's weights.
void check_lse_of_row(const Case& c, const CombineWeights& w, int global_rank, int op_idx, int t,
                      int h, const uint8_t* lse, int max_reported, CallCheck& out) {
  float g32;
  std::memcpy(&g32, lse + sizeof(float) * (static_cast<size_t>(t) * c.geometry.heads_per_rank + h),
              sizeof g32);
  const double g = g32;
  const auto [want, tol] = row_lse_bound(c, w);
  ++out.num_checked;
  if (w.all_masked ? g == want : std::fabs(g - want) <= tol) return;
  ++out.num_mismatches;
  if (std::isnan(g)) ++out.num_nan;
  if (static_cast<int>(out.first_mismatches.size()) >= max_reported) return;
  const double ulp = std::isfinite(want) ? ulp_of(Format::kFp32, want) : 1.0;
  // dim -1: the combined LSE, not an output element.
  out.first_mismatches.push_back(make_mismatch(global_rank, op_idx, t, h, -1, g, want, tol, ulp));
}

// Rows [begin, end) of the call (row = token * H + h). Counts go to a local
// CallCheck, not to the caller's array of them: chunks' counters side by side
// would share cache lines between threads.
CallCheck check_rows(const Case& c, const OpGenerator& gen, int group_rank, int global_rank,
                     int op_idx, std::span<const uint8_t> got, std::span<const uint8_t> lse,
                     const CheckProfile& profile, int max_reported, int64_t begin, int64_t end) {
  CallCheck out;
  const Format f = format_of(c.out_dtype);
  const int h_count = c.geometry.heads_per_rank, d_count = c.geometry.head_dim;
  const auto elem_bytes = static_cast<size_t>(format_bytes(f));
  RowReference r;
  FusedRow fused;
  for (int64_t row = begin; row < end; ++row) {
    const int t = static_cast<int>(row / h_count), h = static_cast<int>(row % h_count);
    const int head = group_rank * h_count + h;  // this rank owns heads [r*H, (r+1)*H)
    const size_t base = (static_cast<size_t>(t) * h_count + h) * d_count;
    const uint8_t* got_row = got.data() + base * elem_bytes;
    row_weights(c, gen, t, head, r);
    if (profile.combined_lse && !profile.upstream) {
      check_lse_of_row(c, r.weights, global_rank, op_idx, t, h, lse.data(),
                       max_reported, out);
    }
    const double bound_scale = check_math::bound_scale(c.dcp_size, r.weights.lse_magnitude);
    bool judged = false;  // a fused test already failed: some element is wrong
    if (!profile.upstream && fused_sources(c, gen, t, head, r.weights, fused)) {
      if (fused_row_passes(f, r.weights.all_masked, fused, got_row, d_count, bound_scale)) {
        out.num_checked += d_count;
        continue;
      }
      judged = true;
    }
    row_values(c, gen, t, head, profile.upstream, r);
    const RowTol mode = r.weights.all_masked ? RowTol::kZero
                        : profile.upstream   ? RowTol::kUpstream
                                             : RowTol::kStrict;
    if (!judged && row_passes(f, mode, got_row,
                              profile.upstream ? r.want32_wide.data() : r.want.data(),
                              r.abs_sum.data(), d_count, bound_scale)) {
      out.num_checked += d_count;
      continue;
    }
    for (int d = 0; d < d_count; ++d) {
      const auto di = static_cast<size_t>(d);
      const uint32_t bits = read_bits(f, got.data(), base + di);
      const double g = decode(f, bits);
      const double want = row_want(r, di, profile.upstream);
      const double tol = row_element_tolerance(c, r, di, profile.upstream);
      ++out.num_checked;
      const bool is_nan = std::isnan(g);
      if (!is_nan && std::fabs(g - want) <= tol) continue;
      ++out.num_mismatches;
      if (is_nan) ++out.num_nan;
      if (static_cast<int>(out.first_mismatches.size()) >= max_reported) continue;
      Mismatch m = make_mismatch(global_rank, op_idx, t, h, d, g, want, tol, ulp_of(f, want));
      m.likely_source = likely_source(c, gen, t, head, d, r, bits, g, want, tol);
      out.first_mismatches.push_back(std::move(m));
    }
  }
  return out;
}

// Bytes of one call's [T, H, D] output in its dtype.
size_t output_bytes_of(const Case& c) {
  return static_cast<size_t>(c.num_tokens) * c.geometry.heads_per_rank * c.geometry.head_dim *
         static_cast<size_t>(format_bytes(format_of(c.out_dtype)));
}

}  // namespace

Mismatch mismatch_at(const Case& c, int global_rank, int op_idx, int token, int head, int dim,
                     double got, double want, double tol) {
  const double ulp = dim >= 0             ? ulp_of(format_of(c.out_dtype), want)
                     : std::isfinite(want) ? ulp_of(Format::kFp32, want)
                                           : 1.0;
  return make_mismatch(global_rank, op_idx, token, head, dim, got, want, tol, ulp);
}

int checker_threads(int ranks_per_host, int override_threads) {
  if (override_threads > 0) return override_threads;
  if (const char* env = std::getenv("DCP_CHECK_THREADS"); env != nullptr && std::atoi(env) > 0) {
    return std::atoi(env);
  }
  return std::max(1, available_cpus() / std::max(1, ranks_per_host));
}

CallCheck check_call_output(const Case& c, int group_idx, int group_rank, int global_rank,
                            int op_idx, const std::vector<uint8_t>& got,
                            const CheckProfile& profile, int max_reported) {
  const size_t out_bytes = std::min(got.size(), output_bytes_of(c));
  const std::span<const uint8_t> all(got);
  return check_call_output(c, group_idx, group_rank, global_rank, op_idx, all.first(out_bytes),
                           all.subspan(out_bytes), profile, max_reported);
}

CallCheck check_call_output(const Case& c, int group_idx, int group_rank, int global_rank,
                            int op_idx, std::span<const uint8_t> got,
                            std::span<const uint8_t> lse, const CheckProfile& profile,
                            int max_reported) {
  const int h_count = c.geometry.heads_per_rank, d_count = c.geometry.head_dim;
  const size_t out_bytes = output_bytes_of(c);
  const size_t lse_bytes =
      profile.combined_lse ? sizeof(float) * c.num_tokens * static_cast<size_t>(h_count) : 0;
  DCP_CHECK(got.size() == out_bytes && lse.size() == lse_bytes, HarnessError,
            "output of op {} on rank {} has {} and {} bytes, expected {} and {} ([T={}, H={}, "
            "D={}] {}{})",
            op_idx, global_rank, got.size(), lse.size(), out_bytes, lse_bytes, c.num_tokens,
            h_count, d_count, to_string(c.out_dtype),
            profile.combined_lse ? ", then the fp32 combined LSE" : "");
  const OpGenerator gen(c, group_idx, op_idx);
  const int64_t rows = static_cast<int64_t>(c.num_tokens) * h_count;
  const int threads = std::max(1, profile.num_threads);
  // A few chunks per thread, so that a chunk slowed by mismatches (explained
  // one by one) does not hold the others up; at least 8 rows each.
  const int chunks =
      threads == 1 ? 1 : static_cast<int>(std::clamp<int64_t>(rows / 8, 1, 4 * threads));
  std::vector<CallCheck> parts(static_cast<size_t>(chunks));
  const ThreadPool::Body body = [&](int chunk, int64_t begin, int64_t end) {
    parts[static_cast<size_t>(chunk)] =
        check_rows(c, gen, group_rank, global_rank, op_idx, got, lse, profile, max_reported, begin,
                   end);
  };
  if (chunks == 1) {
    body(0, 0, rows);
  } else {
    ThreadPool::shared(threads).parallel_for(rows, chunks, body);
  }
  CallCheck out = std::move(parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    out.num_checked += parts[i].num_checked;
    out.num_mismatches += parts[i].num_mismatches;
    out.num_nan += parts[i].num_nan;
    for (Mismatch& m : parts[i].first_mismatches) {
      if (static_cast<int>(out.first_mismatches.size()) >= max_reported) break;
      out.first_mismatches.push_back(std::move(m));
    }
  }
  return out;
}

std::vector<uint8_t> rounded_reference_output(const Case& c, int group_idx, int group_rank, int op) {
  const OpGenerator gen(c, group_idx, op);
  const Format f = format_of(c.out_dtype);
  const int w = c.dcp_size, hc = c.geometry.heads_per_rank, dc = c.geometry.head_dim;
  std::vector<uint8_t> out(static_cast<size_t>(c.num_tokens) * hc * dc * format_bytes(f));
  std::vector<std::vector<double>> x(static_cast<size_t>(w), std::vector<double>(dc));
  std::vector<SourceLse> lse(static_cast<size_t>(w));
  for (int t = 0; t < c.num_tokens; ++t) {
    for (int h = 0; h < hc; ++h) {
      const int head = group_rank * hc + h;
      std::vector<const double*> ptrs(static_cast<size_t>(w), nullptr);
      for (int s = 0; s < w; ++s) {
        lse[static_cast<size_t>(s)] = {gen.lse_value(s, t, head), gen.row_masked(s, t)};
        gen.output_row(s, t, head, x[static_cast<size_t>(s)].data());
        ptrs[static_cast<size_t>(s)] = x[static_cast<size_t>(s)].data();
      }
      const CombineRow row =
          combine_row(lse, c.lse_base == LseBase::kE ? LogBase::kE : LogBase::k2, ptrs, dc);
      for (int d = 0; d < dc; ++d) {
        write_value(f, out.data(), (static_cast<size_t>(t) * hc + h) * dc + d,
                    row.out[static_cast<size_t>(d)]);
      }
    }
  }
  return out;
}

}  // namespace dcp
