// Floating-point formats of the kernel's tensors (fp16, bf16, fp32) and exact
// conversions between them and double. Pure C++, independent of cases/: the
// case model maps its DType onto Format.
//
// Every conversion *to* a format rounds once, to nearest, ties to even, with
// correct overflow to infinity, gradual underflow (subnormals) and NaN kept
// NaN (quiet). Conversions *from* a format are exact.
#pragma once

#include <cstddef>
#include <cstdint>

#include "float_bits.h"

namespace dcp {

enum class Format : uint8_t { kFp16, kBf16, kFp32 };

int format_bytes(Format f);          // 2, 2, 4
int format_mantissa_bits(Format f);  // explicit fraction bits: 10, 7, 23
const char* format_name(Format f);   // "fp16", "bf16", "fp32"

// Fast single-value paths (used in the generator's and checker's inner loops).
float fp16_bits_to_float(uint16_t bits);
float bf16_bits_to_float(uint16_t bits);
// float_to_fp16_bits, float_to_bf16_bits (RNE): float_bits.h, shared with the device.

// Generic paths from double: one rounding (no double rounding through float).
uint32_t encode(Format f, double x);  // bits in the low 16 (fp16/bf16) or 32 bits
double decode(Format f, uint32_t bits);
double round_to(Format f, double x);  // decode(encode(f, x))

// The spacing of representable values of `f` at magnitude |x|: 2^(e - mantissa
// bits) in the binade [2^e, 2^(e+1)) holding |x|, the subnormal spacing below
// the smallest normal, and the top binade's spacing at and above the largest
// finite value.
double ulp_of(Format f, double magnitude);

uint32_t quiet_nan_bits(Format f);  // 0x7E00, 0x7FC0, 0x7FC00000
uint32_t all_ones_bits(Format f);   // 0xFFFF or 0xFFFFFFFF (the poison pattern)

// Raw little-endian element access: `index` counts elements, not bytes.
uint32_t read_bits(Format f, const uint8_t* data, size_t index);
void write_bits(Format f, uint8_t* data, size_t index, uint32_t bits);
double read_value(Format f, const uint8_t* data, size_t index);
void write_value(Format f, uint8_t* data, size_t index, double x);  // RNE

}  // namespace dcp
