#include "combine_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "check_math.h"
#include "simd.h"

namespace dcp {
double effective_l2(const SourceLse& s, LogBase base) {
  return check_math::effective_l2(s.lse, s.masked, base == LogBase::kE);
}

CombineWeights combine_weights(std::span<const SourceLse> sources, LogBase base) {
  CombineWeights w;
  combine_weights_into(sources, base, w);
  return w;
}

// The arithmetic is check_math.h's, shared with the device checker.
void combine_weights_into(std::span<const SourceLse> sources, LogBase base, CombineWeights& w) {
  const size_t n = sources.size();
  w.l2.resize(n);
  w.weight.resize(n);
  for (size_t s = 0; s < n; ++s) w.l2[s] = effective_l2(sources[s], base);
  w.all_masked = !check_math::combine_weights(static_cast<int>(n), w.l2.data(), w.weight.data(),
                                              &w.max_l2, &w.lse_magnitude);
}

namespace {

// out (and abs_sum) += ws * x (ws * |x|), element by element, in lanes: the
// same two roundings per element as the scalar loop.
template <int N, bool kAbs>
DCP_SIMD_INLINE void accumulate_into(double ws, const double* x, int n, double* out,
                                     double* abs_sum) {
  using namespace simd;
  using F64 = vec<double, N>;
  const F64 vw = F64{} + ws;
  int d = 0;
  for (; d + N <= n; d += N) {
    const F64 xv = load<F64>(x + d);
    store(out + d, load<F64>(out + d) + vw * xv);
    if constexpr (kAbs) store(abs_sum + d, load<F64>(abs_sum + d) + vw * simd::fabs(xv));
  }
  for (; d < n; ++d) {
    out[d] += ws * x[d];
    if constexpr (kAbs) abs_sum[d] += ws * std::fabs(x[d]);
  }
}
template <int N>
DCP_SIMD_INLINE void accumulate_source_lanes(double ws, const double* x, int n, double* out,
                                             double* abs_sum) {
  if (abs_sum != nullptr) {
    accumulate_into<N, true>(ws, x, n, out, abs_sum);
  } else {
    accumulate_into<N, false>(ws, x, n, out, abs_sum);
  }
}
DCP_SIMD_DISPATCH(void, accumulate_source,
                  (double ws, const double* x, int n, double* out, double* abs_sum),
                  (ws, x, n, out, abs_sum))

template <int N>
DCP_SIMD_INLINE void accumulate_source_fp32_lanes(float ws, const double* x, int n, float* out) {
  using namespace simd;
  using F32 = vec<float, N>;
  const F32 vw = F32{} + ws;
  int d = 0;
  for (; d + N <= n; d += N) {
    const F32 xv = __builtin_convertvector(load<vec<double, N>>(x + d), F32);
    store(out + d, load<F32>(out + d) + vw * xv);
  }
  for (; d < n; ++d) out[d] += ws * static_cast<float>(x[d]);
}
DCP_SIMD_DISPATCH(void, accumulate_source_fp32, (float ws, const double* x, int n, float* out),
                  (ws, x, n, out))

}  // namespace

void combine_values(const CombineWeights& w, std::span<const double* const> values, int head_dim,
                    double* out, double* abs_sum) {
  std::fill(out, out + head_dim, 0.0);
  if (abs_sum) std::fill(abs_sum, abs_sum + head_dim, 0.0);
  if (w.all_masked) return;
  for (size_t s = 0; s < w.weight.size(); ++s) {
    const double ws = w.weight[s];
    if (ws == 0) continue;  // never read: may be null or NaN garbage
    accumulate_source(ws, values[s], head_dim, out, abs_sum);
  }
}

CombineRow combine_row(std::span<const SourceLse> sources, LogBase base,
                       std::span<const double* const> values, int head_dim) {
  CombineRow row;
  row.weights = combine_weights(sources, base);
  row.out.resize(head_dim);
  row.abs_sum.resize(head_dim);
  combine_values(row.weights, values, head_dim, row.out.data(), row.abs_sum.data());
  return row;
}

void combine_row_fp32(std::span<const SourceLse> sources, LogBase base,
                      std::span<const double* const> values, int head_dim, float* out) {
  const size_t n = sources.size();
  constexpr size_t kStack = 16;  // every DCP size on one host; more takes the heap
  float l2_stack[kStack], w_stack[kStack];
  std::vector<float> l2_heap, w_heap;
  if (n > kStack) {
    l2_heap.resize(n);
    w_heap.resize(n);
  }
  float* l2 = n > kStack ? l2_heap.data() : l2_stack;
  float* w = n > kStack ? w_heap.data() : w_stack;
  float m = -std::numeric_limits<float>::infinity();
  for (size_t s = 0; s < n; ++s) {
    const double e = effective_l2(
        {static_cast<double>(static_cast<float>(sources[s].lse)), sources[s].masked}, LogBase::k2);
    const float lse = static_cast<float>(e);
    l2[s] = base == LogBase::kE ? lse * std::numbers::log2e_v<float> : lse;
    m = std::max(m, l2[s]);
  }
  std::fill(out, out + head_dim, 0.0f);
  if (m == -std::numeric_limits<float>::infinity()) return;
  float total = 0;
  for (size_t s = 0; s < n; ++s) {
    w[s] = std::exp2(l2[s] - m);
    total += w[s];
  }
  for (size_t s = 0; s < n; ++s) {
    if (w[s] == 0) continue;
    accumulate_source_fp32(w[s] / total, values[s], head_dim, out);
  }
}

}  // namespace dcp
