#include "numeric.h"

#include "check_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace dcp {
namespace {

struct Layout {
  int mantissa_bits;
  int exponent_bits;
};

Layout layout_of(Format f) {
  switch (f) {
    case Format::kFp16:
      return {10, 5};
    case Format::kBf16:
      return {7, 8};
    case Format::kFp32:
      return {23, 8};
  }
  return {23, 8};
}

// One rounding from double to a binary format with `mant` fraction bits and
// `exp_bits` exponent bits. The quotient a / q below is exact (q is a power of
// two and a / q stays far inside double's normal range), so nearbyint (ties to
// even in the default rounding mode) is the only rounding.
uint32_t encode_generic(double x, Layout l) {
  const int mant = l.mantissa_bits;
  const int bias = (1 << (l.exponent_bits - 1)) - 1;
  const uint32_t exp_all = (1u << l.exponent_bits) - 1;
  const uint32_t sign = std::signbit(x) ? 1u << (mant + l.exponent_bits) : 0u;
  if (std::isnan(x)) return sign | exp_all << mant | 1u << (mant - 1);
  const double a = std::fabs(x);
  if (std::isinf(a)) return sign | exp_all << mant;
  if (a == 0) return sign;
  const int emin = 1 - bias;
  int e = std::max(std::ilogb(a), emin);
  const double n = std::nearbyint(a / std::ldexp(1.0, e - mant));
  auto ni = static_cast<uint64_t>(n);
  if (ni == 0) return sign;
  if (ni >= (uint64_t{1} << (mant + 1))) {  // rounding carried into the next binade
    ni >>= 1;
    e += 1;
  }
  if (e > bias) return sign | exp_all << mant;  // overflow: rounds to infinity
  if (ni < (uint64_t{1} << mant)) return sign | static_cast<uint32_t>(ni);  // subnormal
  return sign | static_cast<uint32_t>(e + bias) << mant |
         static_cast<uint32_t>(ni - (uint64_t{1} << mant));
}

double decode_generic(uint32_t bits, Layout l) {
  const int mant = l.mantissa_bits;
  const int bias = (1 << (l.exponent_bits - 1)) - 1;
  const uint32_t exp_all = (1u << l.exponent_bits) - 1;
  const bool negative = (bits >> (mant + l.exponent_bits)) & 1u;
  const uint32_t ef = (bits >> mant) & exp_all;
  const uint32_t mf = bits & ((1u << mant) - 1);
  double v;
  if (ef == exp_all) {
    v = mf ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (ef == 0) {
    v = std::ldexp(static_cast<double>(mf), 1 - bias - mant);
  } else {
    v = std::ldexp(static_cast<double>(mf | (1u << mant)), static_cast<int>(ef) - bias - mant);
  }
  return negative ? -v : v;
}

}  // namespace

int format_bytes(Format f) { return f == Format::kFp32 ? 4 : 2; }
int format_mantissa_bits(Format f) { return layout_of(f).mantissa_bits; }
const char* format_name(Format f) {
  switch (f) {
    case Format::kFp16:
      return "fp16";
    case Format::kBf16:
      return "bf16";
    case Format::kFp32:
      return "fp32";
  }
  return "?";
}

float fp16_bits_to_float(uint16_t h) { return check_math::fp16_to_float(h); }

float bf16_bits_to_float(uint16_t b) { return check_math::bf16_to_float(b); }

uint32_t encode(Format f, double x) { return encode_generic(x, layout_of(f)); }

double decode(Format f, uint32_t bits) {
  switch (f) {
    case Format::kFp16:
      return fp16_bits_to_float(static_cast<uint16_t>(bits));
    case Format::kBf16:
      return bf16_bits_to_float(static_cast<uint16_t>(bits));
    case Format::kFp32:
      return std::bit_cast<float>(bits);
  }
  return decode_generic(bits, layout_of(f));
}

double round_to(Format f, double x) { return decode(f, encode(f, x)); }

double ulp_of(Format f, double magnitude) {
  const Layout l = layout_of(f);
  return check_math::ulp(l.mantissa_bits, (1 << (l.exponent_bits - 1)) - 1, magnitude);
}

uint32_t quiet_nan_bits(Format f) {
  switch (f) {
    case Format::kFp16:
      return 0x7E00u;
    case Format::kBf16:
      return 0x7FC0u;
    case Format::kFp32:
      return 0x7FC00000u;
  }
  return 0;
}

uint32_t all_ones_bits(Format f) { return f == Format::kFp32 ? 0xFFFFFFFFu : 0xFFFFu; }

uint32_t read_bits(Format f, const uint8_t* data, size_t index) {
  const int n = format_bytes(f);
  const uint8_t* p = data + index * static_cast<size_t>(n);
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

void write_bits(Format f, uint8_t* data, size_t index, uint32_t bits) {
  const int n = format_bytes(f);
  uint8_t* p = data + index * static_cast<size_t>(n);
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(bits >> (8 * i));
}

double read_value(Format f, const uint8_t* data, size_t index) {
  return decode(f, read_bits(f, data, index));
}

void write_value(Format f, uint8_t* data, size_t index, double x) {
  write_bits(f, data, index, encode(f, x));
}

}  // namespace dcp
