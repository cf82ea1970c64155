// float -> fp16 / bf16 bits, rounding to nearest, ties to even: one definition
// compiled for the host (the generator, the checker) and for the device (the
// GPU's input producer), so both store the same bits. C++17 (device code is).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "hd.h"

namespace dcp {

DCP_HD uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

DCP_HD float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

DCP_HD uint16_t float_to_fp16_bits(float f) {
  const uint32_t x = float_bits(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return sign | 0x7E00u | ((ax >> 13) & 0x3FFu);  // NaN stays quiet NaN
  if (ax >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520: ties to even round up to inf
  if (ax < 0x38800000u) {                        // below 2^-14: subnormal or zero
    // v * 2^24 is exact and < 1024; a result of 1024 is the smallest normal.
    const float scaled = bits_float(ax) * 0x1p24f;
#if defined(__CUDA_ARCH__)
    return sign | static_cast<uint16_t>(rintf(scaled));  // to nearest even, like nearbyint
#else
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
#endif
  }
  uint32_t r = ax - ((127u - 15u) << 23);  // rebias; a mantissa carry bumps the exponent
  r += 0xFFFu + ((r >> 13) & 1u);
  return sign | static_cast<uint16_t>(r >> 13);
}

DCP_HD uint16_t float_to_bf16_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  x += 0x7FFFu + ((x >> 16) & 1u);  // ties to even; overflow carries into inf correctly
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace dcp
