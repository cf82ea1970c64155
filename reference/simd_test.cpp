// The lanes of simd.h and the combine built on them compute exactly what the
// scalar code computes, at every SIMD level this CPU has.
#include "simd.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <ios>
#include <limits>
#include <vector>

#include "combine_reference.h"
#include "numeric.h"

namespace dcp {
namespace {

using namespace simd;

struct ForcedLevel {
  explicit ForcedLevel(Level l) { force_level(l); }
  ~ForcedLevel() { clear_forced_level(); }
};
constexpr Level kLevels[] = {Level::kV4, Level::kV3, Level::kBaseline};

// Conversions over arrays, built at every level like the real kernels.
enum class Conv : uint8_t { kToBf16, kToFp16, kFromBf16, kFromFp16 };
template <int N>
DCP_SIMD_INLINE void convert_lanes(Conv k, const uint32_t* in, uint32_t* out, int n) {
  using U = vec<uint32_t, N>;
  using F = vec<float, N>;
  for (int i = 0; i + N <= n; i += N) {
    const U x = load<U>(in + i);
    switch (k) {
      case Conv::kToBf16:
        store(out + i, float_to_bf16(bits<F>(x)));
        break;
      case Conv::kToFp16:
        store(out + i, float_to_fp16(bits<F>(x)));
        break;
      case Conv::kFromBf16:
        store(out + i, bits<U>(bf16_to_float(x)));
        break;
      case Conv::kFromFp16:
        store(out + i, bits<U>(fp16_to_float(x)));
        break;
    }
  }
}
DCP_SIMD_DISPATCH(void, convert, (Conv k, const uint32_t* in, uint32_t* out, int n),
                  (k, in, out, n))

uint32_t scalar(Conv k, uint32_t x) {
  switch (k) {
    case Conv::kToBf16:
      return float_to_bf16_bits(std::bit_cast<float>(x));
    case Conv::kToFp16:
      return float_to_fp16_bits(std::bit_cast<float>(x));
    case Conv::kFromBf16:
      return std::bit_cast<uint32_t>(bf16_bits_to_float(static_cast<uint16_t>(x)));
    case Conv::kFromFp16:
      return std::bit_cast<uint32_t>(fp16_bits_to_float(static_cast<uint16_t>(x)));
  }
  return 0;
}

TEST_CASE("lane conversions equal the scalar ones, bit for bit") {
  // Every half; floats: every top half with the low halves where rounding
  // turns (ties, either side of them, both formats) and a few others.
  std::vector<uint32_t> halves(65536), floats;
  for (uint32_t h = 0; h < 65536; ++h) halves[h] = h;
  const uint32_t lows[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x2FFF,
                           0x3000, 0x3001, 0x5555, 0x7FFF, 0x8000, 0x8001, 0x9000, 0xAAAA,
                           0xBFFF, 0xC000, 0xEFFF, 0xF000, 0xF001, 0xFFFF};
  for (uint32_t hi = 0; hi < 65536; ++hi) {
    for (uint32_t lo : lows) floats.push_back(hi << 16 | lo);
  }
  for (Level level : kLevels) {
    const ForcedLevel forced(level);
    CAPTURE(static_cast<int>(simd::level()));
    for (Conv k : {Conv::kToBf16, Conv::kToFp16, Conv::kFromBf16, Conv::kFromFp16}) {
      CAPTURE(static_cast<int>(k));
      const std::vector<uint32_t>& in =
          k == Conv::kToBf16 || k == Conv::kToFp16 ? floats : halves;
      std::vector<uint32_t> out(in.size());
      convert(k, in.data(), out.data(), static_cast<int>(in.size()));
      size_t wrong = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        if (out[i] != scalar(k, in[i]) && wrong++ < 3) {
          MESSAGE("input 0x" << std::hex << in[i] << ": lanes 0x" << out[i] << ", scalar 0x"
                             << scalar(k, in[i]));
        }
      }
      CHECK(wrong == 0);
    }
  }
}

// The combine as it was written before lanes, each product rounded on its own
// (volatile: never fused with the sum, whatever this file's flags).
void scalar_combine(const CombineWeights& w, const std::vector<const double*>& x, int n,
                    std::vector<double>& out, std::vector<double>& abs_sum) {
  out.assign(static_cast<size_t>(n), 0.0);
  abs_sum.assign(static_cast<size_t>(n), 0.0);
  if (w.all_masked) return;
  for (size_t s = 0; s < w.weight.size(); ++s) {
    const double ws = w.weight[s];
    if (ws == 0) continue;
    for (int d = 0; d < n; ++d) {
      volatile double p = ws * x[s][d];
      out[static_cast<size_t>(d)] += p;
    }
    for (int d = 0; d < n; ++d) {
      volatile double p = ws * std::fabs(x[s][d]);
      abs_sum[static_cast<size_t>(d)] += p;
    }
  }
}

void scalar_combine_fp32(std::span<const SourceLse> lse, LogBase base,
                         const std::vector<const double*>& x, int n, std::vector<float>& out) {
  const size_t ns = lse.size();
  std::vector<float> l2(ns), e(ns);
  float m = -std::numeric_limits<float>::infinity();
  for (size_t s = 0; s < ns; ++s) {
    const double v =
        effective_l2({static_cast<double>(static_cast<float>(lse[s].lse)), lse[s].masked},
                     LogBase::k2);
    volatile float l = static_cast<float>(v);
    l2[s] = base == LogBase::kE ? l * std::numbers::log2e_v<float> : l;
    m = std::max(m, l2[s]);
  }
  out.assign(static_cast<size_t>(n), 0.0f);
  if (m == -std::numeric_limits<float>::infinity()) return;
  float total = 0;
  for (size_t s = 0; s < ns; ++s) {
    e[s] = std::exp2(l2[s] - m);
    total += e[s];
  }
  for (size_t s = 0; s < ns; ++s) {
    if (e[s] == 0) continue;
    const float ws = e[s] / total;
    for (int d = 0; d < n; ++d) {
      volatile float p = ws * static_cast<float>(x[s][d]);
      out[static_cast<size_t>(d)] += p;
    }
  }
}

TEST_CASE("the combine in lanes equals the scalar loops, tails and skipped sources included") {
  uint64_t state = 0x1234567;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 11;
  };
  for (Level level : kLevels) {
    const ForcedLevel forced(level);
    for (int trial = 0; trial < 300; ++trial) {
      const int w = 1 + trial % 6, n = 1 + static_cast<int>(next() % 70);
      std::vector<SourceLse> lse(static_cast<size_t>(w));
      std::vector<std::vector<double>> x(static_cast<size_t>(w));
      std::vector<const double*> ptrs(static_cast<size_t>(w));
      for (int s = 0; s < w; ++s) {
        const auto si = static_cast<size_t>(s);
        lse[si].lse = static_cast<float>(static_cast<double>(next() % 4000) / 100 - 20);
        lse[si].masked = next() % 5 == 0;
        if (next() % 7 == 0) lse[si].lse = -std::numeric_limits<double>::infinity();
        x[si].resize(static_cast<size_t>(n));
        for (double& v : x[si]) {
          v = round_to(Format::kBf16, static_cast<double>(next() % 100000) / 25000 - 2);
        }
        // A source that must not be read is null or NaN garbage.
        const bool unread = lse[si].masked || std::isinf(lse[si].lse);
        if (unread && s % 2 == 0) {
          ptrs[si] = nullptr;
        } else {
          if (unread) x[si].assign(static_cast<size_t>(n), std::nan(""));
          ptrs[si] = x[si].data();
        }
      }
      for (LogBase base : {LogBase::kE, LogBase::k2}) {
        const CombineWeights cw = combine_weights(lse, base);
        std::vector<double> out(static_cast<size_t>(n)), abs_sum(static_cast<size_t>(n)), want,
            want_abs;
        combine_values(cw, ptrs, n, out.data(), abs_sum.data());
        scalar_combine(cw, ptrs, n, want, want_abs);
        REQUIRE(std::memcmp(out.data(), want.data(), out.size() * sizeof(double)) == 0);
        REQUIRE(std::memcmp(abs_sum.data(), want_abs.data(), out.size() * sizeof(double)) == 0);
        std::vector<float> out32(static_cast<size_t>(n)), want32;
        combine_row_fp32(lse, base, ptrs, n, out32.data());
        scalar_combine_fp32(lse, base, ptrs, n, want32);
        REQUIRE(std::memcmp(out32.data(), want32.data(), out32.size() * sizeof(float)) == 0);
        CombineWeights reused = combine_weights(lse, LogBase::k2);  // other contents first
        combine_weights_into(lse, base, reused);
        CHECK(reused.weight == cw.weight);
        CHECK(reused.all_masked == cw.all_masked);
        CHECK(reused.lse_magnitude == cw.lse_magnitude);
        CHECK(reused.max_l2 == cw.max_l2);
      }
    }
  }
}

}  // namespace
}  // namespace dcp
