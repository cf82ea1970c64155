// The checker's float64 arithmetic, one definition compiled for the host
// (the CPU checker: combine_reference.cpp, checker.cpp) and for the device
// (kernels/device_check.cu): the weights, exp2 and log2, the combined LSE,
// the per-element and combined-LSE bounds, ulp spacing and the 16-bit
// decodes. Both checkers therefore compute the same bits for the same row,
// and CI holds them equal on the host (device_check_test.cpp). C++17.
//
// Rounding: every operation rounds once, to nearest. On the device the _rn
// intrinsics, which nvcc never contracts into fused multiply-adds; on the
// host plain operators, in files built with -ffp-contract=off (and the
// x86-64 baseline has no FMA). exp2 and log2 are ours, not the libraries'
// (whose last bits differ between glibc and CUDA): about 1 ulp, far below
// any tolerance they feed (docs/DESIGN.md, "The check on the GPU").
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "float_bits.h"
#include "hd.h"

namespace dcp::check_math {

DCP_HD double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
DCP_HD double sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
DCP_HD double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
DCP_HD double div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

DCP_HD uint64_t dbits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
DCP_HD double bits_d(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}
DCP_HD double inf() { return bits_d(0x7FF0000000000000ull); }
DCP_HD double neg_inf() { return bits_d(0xFFF0000000000000ull); }
DCP_HD double quiet_nan() { return bits_d(0x7FF8000000000000ull); }
DCP_HD bool is_nan(double x) { return x != x; }
DCP_HD double abs(double x) { return bits_d(dbits(x) & 0x7FFFFFFFFFFFFFFFull); }
DCP_HD double max(double a, double b) { return b > a ? b : a; }  // a wins ties and NaN b
DCP_HD double pow2(int e) {  // 2^e for -1022 <= e <= 1023, exact
  return bits_d(static_cast<uint64_t>(e + 1023) << 52);
}

constexpr double kLn2 = 0x1.62e42fefa39efp-1;     // std::numbers::ln2
constexpr double kLog2e = 0x1.71547652b82fep+0;   // std::numbers::log2e
constexpr double kU32 = 0x1p-24;                  // fp32 unit roundoff
constexpr double kEps32 = 0x1p-23;                // fp32 machine epsilon

// 2^x. x = k + f with k the nearest integer and |f| <= 1/2 (both exact),
// 2^f = e^(f ln 2) by its Taylor series to degree 13 (truncation < 1e-17),
// then scaled by 2^k exactly (a subnormal result rounds once).
DCP_HD double exp2(double x) {
  if (is_nan(x)) return x;
  if (x < -1100) return 0;
  if (x > 1100) return inf();
  const double k = floor(add(x, 0.5));
  const double t = mul(sub(x, k), kLn2);
  constexpr double c[] = {1.0 / 6227020800, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800,
                          1.0 / 362880,     1.0 / 40320,     1.0 / 5040,     1.0 / 720,
                          1.0 / 120,        1.0 / 24,        1.0 / 6,        0.5,
                          1.0,              1.0};
  double p = c[0];
  for (int i = 1; i < 14; ++i) p = add(mul(p, t), c[i]);
  const int ki = static_cast<int>(k);
  if (ki > 1023) return mul(mul(p, pow2(1023)), pow2(ki - 1023));
  if (ki >= -1022) return mul(p, pow2(ki));
  return mul(mul(p, pow2(ki + 600)), pow2(-600));
}

// log2(x) for finite x > 0 (else NaN, -inf for 0, +inf for +inf). x = 2^e m
// with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(z), z = (m - 1) / (m + 1),
// |z| < 0.172, by its series to z^27 (truncation < 1e-18).
DCP_HD double log2(double x) {
  if (is_nan(x) || x < 0) return quiet_nan();
  if (x == 0) return neg_inf();
  if (x == inf()) return x;
  int e = 0;
  if (x < 0x1p-1022) {  // subnormal: scale into the normals, exactly
    x = mul(x, 0x1p60);
    e = -60;
  }
  const uint64_t b = dbits(x);
  e += static_cast<int>((b >> 52) & 0x7FF) - 1023;
  double m = bits_d((b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);  // [1, 2)
  if (m > 0x1.6a09e667f3bcdp+0) {  // sqrt(2)
    m = mul(m, 0.5);
    e += 1;
  }
  const double z = div(sub(m, 1.0), add(m, 1.0));
  const double z2 = mul(z, z);
  double s = 1.0 / 27;
  for (int k = 12; k >= 0; --k) s = add(mul(s, z2), div(1.0, 2 * k + 1));  // 1 + z2/3 + ...
  const double ln_m = mul(mul(2.0, z), s);
  return add(static_cast<double>(e), mul(ln_m, kLog2e));
}

// One source's LSE in base 2, or -inf when it must not contribute (SPEC:
// masked, NaN, +inf and -inf all count as -inf).
DCP_HD double effective_l2(double lse, bool masked, bool base_e) {
  if (masked || is_nan(lse) || lse == inf()) return neg_inf();
  return base_e ? mul(lse, kLog2e) : lse;
}

// The largest of l2[0, n) (-inf when n == 0 or all are -inf).
DCP_HD double max_l2_of(int n, const double* l2) {
  double m = neg_inf();
  for (int s = 0; s < n; ++s) m = max(m, l2[s]);
  return m;
}

// One source's unnormalised weight 2^(l2 - m) for the largest l2 m (finite):
// 0 for l2 == -inf. The costly part of a row's weights, one source at a time
// (on the device, a lane per source).
DCP_HD double weight_term(double l2, double m) { return exp2(sub(l2, m)); }

// combine_weights from the terms (weight_term of each source against
// m = max_l2_of, any when m > -inf; terms of -inf sources are 0).
DCP_HD void combine_weights_from_terms(int n, const double* l2, double m, const double* term,
                                       double* weight, double* lse_magnitude) {
  double total = 0;
  for (int s = 0; s < n; ++s) total = add(total, term[s]);
  double max_abs = 0;
  for (int s = 0; s < n; ++s) {
    weight[s] = div(term[s], total);
    if (weight[s] > 0) max_abs = max(max_abs, abs(l2[s]));
  }
  *lse_magnitude = add(max_abs, abs(m));
}

// The combine's weights from the sources' effective LSEs l2[0, n): weight[s] =
// 2^(l2_s - m) / sum_j 2^(l2_j - m), summed in source order. Returns false
// when every source is -inf (all-masked: weights 0, *max_l2 = 0). Sets
// *lse_magnitude = max over weight > 0 of |l2_s|, plus |m| (checker.cpp).
DCP_HD bool combine_weights(int n, const double* l2, double* weight, double* max_l2,
                            double* lse_magnitude) {
  const double m = max_l2_of(n, l2);
  *max_l2 = 0;
  *lse_magnitude = 0;
  if (m == neg_inf()) {
    for (int s = 0; s < n; ++s) weight[s] = 0;
    return false;
  }
  *max_l2 = m;
  for (int s = 0; s < n; ++s) weight[s] = weight_term(l2[s], m);  // exp2(-inf) == 0
  combine_weights_from_terms(n, l2, m, weight, weight, lse_magnitude);
  return true;
}

// The float64 combined LSE of a row in its base (-inf when all-masked), from
// the sources' terms against max_l2 (weight_term; read only where l2 > -inf).
DCP_HD double combined_lse_from_terms(int n, const double* l2, const double* term, double max_l2,
                                      bool any, bool base_e) {
  if (!any) return neg_inf();
  double sum = 0;
  for (int s = 0; s < n; ++s) {
    if (l2[s] > neg_inf()) sum = add(sum, term[s]);
  }
  const double l = add(max_l2, log2(sum));
  return base_e ? mul(l, kLn2) : l;
}

// The float64 combined LSE of a row in its base (-inf when all-masked).
DCP_HD double combined_lse(int n, const double* l2, double max_l2, bool any, bool base_e) {
  if (!any) return neg_inf();
  double sum = 0;
  for (int s = 0; s < n; ++s) {
    if (l2[s] > neg_inf()) sum = add(sum, weight_term(l2[s], max_l2));
  }
  const double l = add(max_l2, log2(sum));
  return base_e ? mul(l, kLn2) : l;
}

// Bounds (derived in checker.cpp).
DCP_HD double bound_scale(int num_sources, double lse_magnitude) {
  return add(add(mul(4.0, num_sources), 16), mul(9.0, lse_magnitude));
}
DCP_HD double fp32_error_bound(double abs_sum, double scale) {
  return add(mul(mul(kU32, abs_sum), scale), 0x1p-100);
}
// The spacing of a format with `mantissa` fraction bits and exponent `bias`
// at magnitude |x| (numeric.h's ulp_of): NaN reads as the smallest normal
// binade, infinity as the largest.
DCP_HD double ulp(int mantissa, int bias, double x) {
  const double a = abs(x);
  int e;
  if (is_nan(a)) {
    e = 1 - bias;
  } else if (a == inf()) {
    e = bias;
  } else {
    e = static_cast<int>((dbits(a) >> 52) & 0x7FF) - 1023;
  }
  e = e < 1 - bias ? 1 - bias : e > bias ? bias : e;
  return pow2(e - mantissa);
}
DCP_HD double element_tolerance(int mantissa, int bias, double want, double abs_sum,
                                double scale) {
  const double e32 = fp32_error_bound(abs_sum, scale);
  return add(mul(0.5, ulp(mantissa, bias, add(abs(want), e32))), e32);
}
DCP_HD double combined_lse_tolerance(double want, int num_sources, double lse_magnitude) {
  return mul(kEps32, add(add(mul(4.0, lse_magnitude), mul(4.0, num_sources + 2)),
                         mul(2.0, abs(want))));
}
// An element passes when it is not NaN and within `tol` of want.
DCP_HD bool element_passes(double got, double want, double tol) {
  return !is_nan(got) && abs(sub(got, want)) <= tol;
}

// 16-bit floats to float, exactly.
DCP_HD float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return bits_float(sign | 0x7F800000u | mant << 13);
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 0x1p-24f;  // exact
    return sign ? -v : v;
  }
  return bits_float(sign | (exp + 112u) << 23 | mant << 13);
}
DCP_HD float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }
// Either 16-bit format (bf16, else fp16) to float, exactly.
DCP_HD float half_to_float(bool bf16, uint16_t b) { return bf16 ? bf16_to_float(b) : fp16_to_float(b); }

}  // namespace dcp::check_math
