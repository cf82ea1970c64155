// The arithmetic of the LSE-weighted combine (SPEC section 1), shared by the
// CUDA kernels and the host model so both compute the same fp32 values:
// LSE to base 2, NaN/+inf treated as -inf, weights 2^(l - m) / sum, fp32
// fused multiply-add accumulation in source order, one rounding to the output
// dtype. Plain C++ when compiled by a host compiler; DCP_HD functions are
// __host__ __device__ under nvcc. Independent of reference/ on purpose: the
// reference must not share code with what it checks.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#include "hd.h"

namespace dcp {

// Element types of the kernel's tensors. Values match dcp::DType (cases/case.h)
// so the backend maps one onto the other with a switch, not a cast.
enum class ElemType : uint8_t { kFp16 = 0, kBf16 = 1, kFp32 = 2 };

inline constexpr int kMaxDcpSize = 8;  // largest DCP group the kernels support

namespace math {

// log2(e) rounded to fp32 (0x3FB8AA3B): base-e LSEs are multiplied by it.
inline constexpr float kLog2e = 1.44269504088896340736f;
inline constexpr float kLn2 = 0.69314718055994530942f;

DCP_HD float neg_inf() { return -INFINITY; }

DCP_HD uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

DCP_HD float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// --- 16-bit conversions (round to nearest, ties to even; exact widening) ---

DCP_HD float fp16_to_float(uint16_t h) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(h));
#else
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0) {
    // Zero or subnormal: man * 2^-24 is exact in fp32.
    const float mag = static_cast<float>(man) * 5.9604644775390625e-08f;
    return sign ? -mag : mag;
  }
  if (exp == 31) return bits_float(sign | 0x7F800000u | (man << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
#endif
}

DCP_HD uint16_t float_to_fp16(float f) {
#ifdef __CUDA_ARCH__
  return __half_as_ushort(__float2half_rn(f));
#else
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00u;   // NaN stays NaN (quiet)
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to inf
  const uint32_t e = a >> 23;
  if (e < 102) return sign;  // < 2^-25 (or exactly it: tie to even 0)
  uint32_t man = (a & 0x7FFFFFu) | 0x800000u;
  uint32_t shift = 13;
  uint32_t base = 0;
  if (e < 113) {
    shift = 126 - e;  // subnormal half: man * 2^(e-150) / 2^-24
  } else {
    base = (e - 112) << 10;
    man &= 0x7FFFFFu;
  }
  uint32_t r = man >> shift;
  const uint32_t rem = man & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1u))) ++r;  // carries into the exponent correctly
  return static_cast<uint16_t>(sign | (base + r));
#endif
}

DCP_HD float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

DCP_HD uint16_t float_to_bf16(float f) {
#ifdef __CUDA_ARCH__
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
  const uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
#endif
}

// --- LSE ---

// SPEC: base e is converted by one fp32 multiply by log2(e); NaN and +inf count
// as -inf. `!(l < inf)` is true exactly for NaN and +inf.
DCP_HD float lse_to_base2(float raw, bool base_e) {
  const float l = base_e ? raw * kLog2e : raw;
  return (l < INFINITY) ? l : neg_inf();
}

// m = max of the first n entries of l2 (-inf when n == 0 or all are -inf).
DCP_HD float max_lse(const float* l2, int n) {
  float m = neg_inf();
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int s = 0; s < kMaxDcpSize; ++s) {
    if (s < n) m = l2[s] > m ? l2[s] : m;
  }
  return m;
}

// Unnormalised weights e[s] = 2^(l[s] - m), m = max l, for n <= kMaxDcpSize
// sources. Returns their sum, or 0 when every l is -inf (then every e[s] is 0).
// l[] must already be sanitised (lse_to_base2), so it holds no NaN; a -inf
// source gets exactly 0. Loops run to the compile-time bound so the device
// keeps both arrays in registers; entries >= n are neither read nor written.
DCP_HD float combine_exponents(const float* l2, int n, float* e) {
  const float m = max_lse(l2, n);
  const bool any = m > neg_inf();
  float sum = 0.0f;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int s = 0; s < kMaxDcpSize; ++s) {
    if (s < n) {
      e[s] = (any && l2[s] > neg_inf()) ? exp2f(l2[s] - m) : 0.0f;
      sum += e[s];
    }
  }
  return sum;  // 0, or >= 1: the max source contributes 2^0
}

// w[s] = 2^(l[s] - m) / sum. Returns false when every source is -inf: the row
// is then exactly zero and no source is read.
DCP_HD bool combine_weights(const float* l2, int n, float* w) {
  const float sum = combine_exponents(l2, n, w);
  if (sum == 0.0f) return false;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int s = 0; s < kMaxDcpSize; ++s) {
    if (s < n) w[s] = w[s] / sum;
  }
  return true;
}

// The combined LSE of one row in the inputs' base: m + log2(sum_s 2^(l[s] - m))
// in base 2, times ln 2 for base-e inputs (one fp32 multiply); -inf when
// every source is -inf (an all-empty row). l[] sanitised as above.
DCP_HD float combined_lse(const float* l2, int n, bool base_e) {
  float e[kMaxDcpSize];
  const float sum = combine_exponents(l2, n, e);
  if (sum == 0.0f) return neg_inf();
  const float l = max_lse(l2, n) + log2f(sum);
  return base_e ? l * kLn2 : l;
}

// One fp32 accumulation step; sources are added in ascending order. A source
// with weight 0 must not be passed here (it is never read: its row may be NaN).
DCP_HD float accumulate(float acc, float w, float x) { return fmaf(w, x, acc); }

// --- Masking by empty KV shards ---

// True when `token` belongs to a sequence whose seq_lens entry is 0 on this
// rank. Sequence s owns tokens [qsl[s], qsl[s+1]); qsl is ascending. A token
// outside every sequence is not masked. seq_lens == nullptr: nothing masked.
DCP_HD bool token_masked(const int32_t* seq_lens, const int32_t* qsl, int num_seqs, int token) {
  if (seq_lens == nullptr || qsl == nullptr || num_seqs <= 0) return false;
  if (token < qsl[0] || token >= qsl[num_seqs]) return false;
  int lo = 0, hi = num_seqs;  // invariant: qsl[lo] <= token < qsl[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (qsl[mid] <= token) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return seq_lens[lo] == 0;
}

// Conversions by element type, for code templated on the 16-bit out dtype.
template <ElemType kType>
DCP_HD float half_bits_to_float(uint16_t bits) {
  static_assert(kType == ElemType::kFp16 || kType == ElemType::kBf16);
  if constexpr (kType == ElemType::kFp16) {
    return fp16_to_float(bits);
  } else {
    return bf16_to_float(bits);
  }
}

template <ElemType kType>
DCP_HD uint16_t float_to_half_bits(float f) {
  static_assert(kType == ElemType::kFp16 || kType == ElemType::kBf16);
  if constexpr (kType == ElemType::kFp16) {
    return float_to_fp16(f);
  } else {
    return float_to_bf16(f);
  }
}

}  // namespace math
}  // namespace dcp
