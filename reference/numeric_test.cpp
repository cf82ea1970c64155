#include "numeric.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace dcp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST_CASE("known bit patterns") {
  CHECK(encode(Format::kFp16, 1.0) == 0x3C00u);
  CHECK(encode(Format::kBf16, 1.0) == 0x3F80u);
  CHECK(encode(Format::kFp32, 1.0) == 0x3F800000u);
  CHECK(encode(Format::kFp16, -2.0) == 0xC000u);
  CHECK(encode(Format::kBf16, -2.0) == 0xC000u);
  CHECK(encode(Format::kFp16, 65504.0) == 0x7BFFu);
  CHECK(encode(Format::kFp16, 0x1p-24) == 0x0001u);  // smallest subnormal
  CHECK(encode(Format::kFp16, 0x1p-14) == 0x0400u);  // smallest normal
  CHECK(encode(Format::kBf16, 0x1p-133) == 0x0001u);
  CHECK(encode(Format::kFp16, -0.0) == 0x8000u);
  CHECK(decode(Format::kFp16, 0x3C00u) == 1.0);
  CHECK(decode(Format::kBf16, 0x3F80u) == 1.0);
  CHECK(decode(Format::kFp16, 0x3555u) == 0x1.554p-2);  // 0.333251953125
  CHECK(decode(Format::kFp16, 0x0001u) == 0x1p-24);
  CHECK(decode(Format::kFp16, 0x7C00u) == kInf);
  CHECK(decode(Format::kBf16, 0xFF80u) == -kInf);
  CHECK(std::isnan(decode(Format::kFp16, 0x7E00u)));
  CHECK(std::isnan(decode(Format::kBf16, 0x7FC0u)));
  CHECK(std::isnan(decode(Format::kFp16, 0xFFFFu)));  // the poison pattern is NaN
  CHECK(std::isnan(decode(Format::kBf16, 0xFFFFu)));
}

TEST_CASE("rounding is to nearest, ties to even") {
  // fp16 spacing at 1 is 2^-10: 1 + 2^-11 is a tie between 1 (even) and 1 + 2^-10.
  CHECK(encode(Format::kFp16, 1.0 + 0x1p-11) == 0x3C00u);
  CHECK(encode(Format::kFp16, 1.0 + 3 * 0x1p-11) == 0x3C02u);  // tie -> even mantissa 2
  CHECK(encode(Format::kFp16, 1.0 + 0x1p-11 + 0x1p-30) == 0x3C01u);
  CHECK(encode(Format::kBf16, 1.0 + 0x1p-8) == 0x3F80u);
  CHECK(encode(Format::kBf16, 1.0 + 3 * 0x1p-8) == 0x3F82u);
  // Double rounding through float would give the wrong answer here: the value
  // is just above a bf16 tie but rounds to the tie in float.
  const double just_above_tie = 1.0 + 0x1p-8 + 0x1p-40;
  CHECK(encode(Format::kBf16, just_above_tie) == 0x3F81u);
  CHECK(float_to_bf16_bits(static_cast<float>(just_above_tie)) == 0x3F80u);
  // Subnormal ties.
  CHECK(encode(Format::kFp16, 0x1p-25) == 0x0000u);      // tie between 0 and min -> 0
  CHECK(encode(Format::kFp16, 3 * 0x1p-25) == 0x0002u);  // tie between 1 and 2 -> 2
}

TEST_CASE("overflow rounds to infinity, NaN stays NaN") {
  CHECK(encode(Format::kFp16, 65519.0) == 0x7BFFu);
  CHECK(encode(Format::kFp16, 65520.0) == 0x7C00u);  // tie with 65536 -> even -> inf
  CHECK(encode(Format::kFp16, -1e10) == 0xFC00u);
  CHECK(encode(Format::kBf16, 1e39) == 0x7F80u);
  CHECK(encode(Format::kFp32, 1e39) == 0x7F800000u);
  CHECK(encode(Format::kFp16, kInf) == 0x7C00u);
  CHECK(std::isnan(round_to(Format::kFp16, std::nan(""))));
  CHECK(std::isnan(round_to(Format::kBf16, std::nan(""))));
  CHECK(std::isnan(round_to(Format::kFp32, std::nan(""))));
  CHECK(float_to_fp16_bits(65520.0f) == 0x7C00u);
  CHECK(float_to_fp16_bits(std::numeric_limits<float>::quiet_NaN()) == 0x7E00u);
  CHECK(std::isnan(fp16_bits_to_float(float_to_fp16_bits(std::nanf("")))));
}

TEST_CASE("fast float paths agree with the generic double path") {
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 200000; ++i) {
    auto bits = static_cast<uint32_t>(rng());
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    REQUIRE(float_to_fp16_bits(f) == encode(Format::kFp16, f));
    REQUIRE(float_to_bf16_bits(f) == encode(Format::kBf16, f));
    REQUIRE(encode(Format::kFp32, f) == bits);
  }
  // Every fp16 and bf16 pattern decodes and re-encodes to itself (NaNs aside).
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const double h = decode(Format::kFp16, b);
    const double g = decode(Format::kBf16, b);
    if (!std::isnan(h)) REQUIRE(encode(Format::kFp16, h) == b);
    if (!std::isnan(g)) REQUIRE(encode(Format::kBf16, g) == b);
    if (!std::isnan(h)) REQUIRE(float_to_fp16_bits(static_cast<float>(h)) == b);
  }
}

TEST_CASE("ulp_of") {
  CHECK(ulp_of(Format::kFp16, 1.0) == 0x1p-10);
  CHECK(ulp_of(Format::kFp16, 1.999) == 0x1p-10);
  CHECK(ulp_of(Format::kFp16, 2.0) == 0x1p-9);
  CHECK(ulp_of(Format::kFp16, -0.75) == 0x1p-11);
  CHECK(ulp_of(Format::kBf16, 1.0) == 0x1p-7);
  CHECK(ulp_of(Format::kFp32, 1.0) == 0x1p-23);
  CHECK(ulp_of(Format::kFp16, 0.0) == 0x1p-24);  // subnormal spacing
  CHECK(ulp_of(Format::kFp16, 1e-7) == 0x1p-24);
  CHECK(ulp_of(Format::kFp16, 1e9) == 0x1p5);  // top binade
  CHECK(ulp_of(Format::kBf16, 0.0) == 0x1p-133);
  CHECK(ulp_of(Format::kFp32, 1e-300) == 0x1p-149);
  CHECK(ulp_of(Format::kFp16, INFINITY) == 0x1p5);
  CHECK(ulp_of(Format::kBf16, 3.0e38) == 0x1p120);
  // Agrees with the definition on every finite fp16 value.
  for (uint32_t b = 0; b < 0x7C00u; ++b) {
    const double v = decode(Format::kFp16, b);
    const double next = decode(Format::kFp16, b + 1);
    REQUIRE(ulp_of(Format::kFp16, v) == (b == 0x7BFFu ? 0x1p5 : next - v));
  }
}

TEST_CASE("little-endian element access") {
  uint8_t buf[8] = {};
  write_value(Format::kFp16, buf, 1, 1.0);
  CHECK(buf[2] == 0x00);
  CHECK(buf[3] == 0x3C);
  CHECK(read_value(Format::kFp16, buf, 1) == 1.0);
  write_value(Format::kFp32, buf, 1, -2.0);  // 0xC0000000
  CHECK(buf[7] == 0xC0);
  CHECK(read_bits(Format::kFp32, buf, 1) == 0xC0000000u);
  write_bits(Format::kBf16, buf, 0, all_ones_bits(Format::kBf16));
  CHECK(read_bits(Format::kBf16, buf, 0) == 0xFFFFu);
  CHECK(std::isnan(read_value(Format::kBf16, buf, 0)));
}

}  // namespace
}  // namespace dcp
