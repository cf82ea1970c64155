// The float64 reference for one (token, head) row of the LSE-weighted combine
// (SPEC section 1), plus an fp32 emulation for the upstream-test profile.
//
//   l_s = lse_s in base 2 (base e times log2(e)); NaN, +inf and masked count as -inf
//   m   = max_s l_s; every l_s == -inf  =>  the row is exactly zero
//   w_s = 2^(l_s - m) / sum_j 2^(l_j - m)
//   out = sum_s w_s * x_s
//
// A source whose weight is 0 is never read: its value pointer may be null or
// point at NaN garbage. Pure C++ (no CUDA).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dcp {

enum class LogBase : uint8_t { kE, k2 };

struct SourceLse {
  double lse = 0;       // as stored (already converted from its dtype), in `base`
  bool masked = false;  // the source's KV shard is empty for this token
};

struct CombineWeights {
  std::vector<double> l2;      // per source, base 2; -inf for masked / NaN / +inf / -inf
  std::vector<double> weight;  // per source; sums to 1 unless all_masked (then all 0)
  double max_l2 = 0;           // m (0 when all_masked)
  // max over sources with weight > 0 of |l2_s|, plus |m|: scales the error of
  // the kernel's fp32 exponent arithmetic (see checker.cpp).
  double lse_magnitude = 0;
  bool all_masked = false;
};

// Effective base-2 LSE of one source (-inf when it must not contribute).
double effective_l2(const SourceLse& s, LogBase base);

CombineWeights combine_weights(std::span<const SourceLse> sources, LogBase base);
// The same into `w`, reusing its vectors' capacity (no allocation per row).
void combine_weights_into(std::span<const SourceLse> sources, LogBase base, CombineWeights& w);

// out[d] = sum_s w_s * values[s][d] over sources with w_s > 0 (others are
// never dereferenced); abs_sum[d] = sum_s w_s * |values[s][d]| when non-null.
// An all-masked row yields exact zeros. Sums run in source order from +0, one
// rounding per product and per sum (never fused), 8 elements at a time.
void combine_values(const CombineWeights& w, std::span<const double* const> values, int head_dim,
                    double* out, double* abs_sum);

// Convenience: both steps for one row.
struct CombineRow {
  CombineWeights weights;
  std::vector<double> out;      // head_dim
  std::vector<double> abs_sum;  // head_dim: sum_s w_s * |x_s|
};
CombineRow combine_row(std::span<const SourceLse> sources, LogBase base,
                       std::span<const double* const> values, int head_dim);

// The upstream test's reference: the same formula evaluated in fp32 (inputs
// are fp16/bf16/fp32 values, exactly representable as float). Zero-weight
// sources are never read; an all-masked row is zero.
void combine_row_fp32(std::span<const SourceLse> sources, LogBase base,
                      std::span<const double* const> values, int head_dim, float* out);

}  // namespace dcp
