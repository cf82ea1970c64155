// The generator's output formula in lanes (reference/simd.h), shared by the
// generator's rows and the checker's fused row test so both regenerate the
// same values: element d of a normal row is output_float(key, base + d,
// scale) (generator.cpp), rounded to the output format, never zero; a row's
// key, base and scale come from OpGenerator::row_stream.
//
// Every floating-point product here is exact (by a power of two), so a
// compiler that fuses one with a following addition cannot change a value:
// files using these need no -ffp-contract=off for them (the checker has it
// for its own sums).
#pragma once

#include <cstdint>

#include "mix.h"
#include "numeric.h"
#include "simd.h"

namespace dcp {

// The stream states of elements base .. base + N - 1 (stream_at's argument to
// mix64); add kGolden * N to step to the next N elements.
template <int N>
DCP_SIMD_INLINE simd::vec<uint64_t, N> stream_lanes(uint64_t key, uint64_t base) {
  using U64 = simd::vec<uint64_t, N>;
  return key + (base + 1 + simd::iota<U64>()) * kGolden;
}

// output_float on N consecutive indices whose stream states are `state`
// (key + (index + 1) * kGolden): the float before rounding to the output
// format, finite, |x| <= 2, never zero.
//
// 4 * unit_double(r) - 2 is exact in double: with k = r >> 11 (53 bits),
// top = k >> 52 and low = k mod 2^52, it is 2 + 2 top + low 2^-51 - 4, i.e.
// d1 - (4 - 2 top) where d1 = 2 + low 2^-51 in [2, 4) is built from bits and
// the subtraction is exact (Sterbenz). No 64-bit integer-to-double
// conversion is needed (AVX2 has none).
template <int N>
DCP_SIMD_INLINE simd::vec<float, N> output_floats(const simd::vec<uint64_t, N>& state,
                                                  const simd::vec<float, N>& scale) {
  using namespace simd;
  using U64 = vec<uint64_t, N>;
  using F64 = vec<double, N>;
  using F32 = vec<float, N>;
  U64 z = (state ^ (state >> 30)) * 0xBF58476D1CE4E5B9ull;  // mix64
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const U64 k = z >> 11;
  const F64 d1 = bits<F64>((k & 0x000FFFFFFFFFFFFFull) | 0x4000000000000000ull);
  const F64 off = bits<F64>(0x4010000000000000ull - ((k >> 52) << 52));  // 4.0 or 2.0
  const F32 x = __builtin_convertvector(d1 - off, F32) * scale;
  return select(x == 0.0f, scale, x);  // never zero
}

// The stored bits (float_to_bits of output_float).
template <Format F, int N>
DCP_SIMD_INLINE simd::vec<uint32_t, N> output_lanes(const simd::vec<uint64_t, N>& state,
                                                    const simd::vec<float, N>& scale) {
  const simd::vec<float, N> x = output_floats<N>(state, scale);
  if constexpr (F == Format::kBf16) {
    return simd::float_to_bf16(x);
  } else if constexpr (F == Format::kFp16) {
    return simd::float_to_fp16(x);
  } else {
    return simd::bits<simd::vec<uint32_t, N>>(x);
  }
}

// decode(F, float_to_bits(F, x)) for the x of output_floats (finite, |x| <=
// 2), without the bits: x rounded to F's grid, to nearest, ties to even.
// bf16: the float's low 16 bits rounded away (the carry may reach the
// exponent, as in float_to_bf16_bits). fp16: the same with the low 13 bits
// at and above 2^-14; below, |x| rounded to a multiple of 2^-24 by adding
// and subtracting 0.5 (whose ulp is 2^-24), the sign kept (-0 included).
template <Format F, int N>
DCP_SIMD_INLINE simd::vec<float, N> round_to_grid(const simd::vec<float, N>& x) {
  using namespace simd;
  using U32 = vec<uint32_t, N>;
  using F32 = vec<float, N>;
  const U32 b = bits<U32>(x);
  if constexpr (F == Format::kBf16) {
    return bits<F32>((b + (0x7FFFu + ((b >> 16) & 1u))) & 0xFFFF0000u);
  } else if constexpr (F == Format::kFp16) {
    const U32 sign = b & 0x80000000u, ax = b & 0x7FFFFFFFu;
    const U32 normal = (b + (0xFFFu + ((b >> 13) & 1u))) & 0xFFFFE000u;
    const U32 sub = sign | bits<U32>((bits<F32>(ax) + 0.5f) - 0.5f);
    return bits<F32>(select(ax < 0x38800000u, sub, normal));
  } else {
    return x;
  }
}

// The decoded values (what OpGenerator::output_row stores), in double.
template <Format F, int N>
DCP_SIMD_INLINE simd::vec<double, N> output_values(const simd::vec<uint64_t, N>& state,
                                                   const simd::vec<float, N>& scale) {
  return __builtin_convertvector(round_to_grid<F, N>(output_floats<N>(state, scale)),
                                 simd::vec<double, N>);
}

}  // namespace dcp
