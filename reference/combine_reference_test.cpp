#include "combine_reference.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

namespace dcp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::numeric_limits<double>::quiet_NaN();

// Two-dim rows; NaN rows stand for sources that must never be read.
struct Rows {
  std::vector<std::vector<double>> data;
  std::vector<const double*> ptrs() const {
    std::vector<const double*> p;
    for (const auto& r : data) p.push_back(r.data());
    return p;
  }
};

TEST_CASE("equal LSEs average the sources") {
  const std::vector<SourceLse> lse = {{3.0, false}, {3.0, false}};
  const Rows rows{{{1.0, -2.0}, {3.0, 6.0}}};
  const CombineRow r = combine_row(lse, LogBase::k2, rows.ptrs(), 2);
  CHECK(r.out[0] == 2.0);
  CHECK(r.out[1] == 2.0);
  CHECK(r.abs_sum[0] == 2.0);  // 0.5*1 + 0.5*3
  CHECK(r.abs_sum[1] == 4.0);  // 0.5*2 + 0.5*6
  CHECK(r.weights.weight[0] == 0.5);
  CHECK(r.weights.lse_magnitude == 6.0);  // |3| + |m = 3|
}

TEST_CASE("base 2: LSE gap of 1 gives weights 2/3 and 1/3") {
  const std::vector<SourceLse> lse = {{1.0, false}, {0.0, false}};
  const Rows rows{{{3.0}, {-3.0}}};
  const CombineRow r = combine_row(lse, LogBase::k2, rows.ptrs(), 1);
  CHECK(r.weights.weight[0] == doctest::Approx(2.0 / 3).epsilon(1e-15));
  CHECK(r.out[0] == doctest::Approx(1.0).epsilon(1e-15));  // 3*2/3 - 3/3
}

TEST_CASE("base e is converted with log2(e)") {
  // lse_e = ln 2 makes l2 = 1: the same weights as the base-2 test above.
  const std::vector<SourceLse> lse = {{std::numbers::ln2, false}, {0.0, false}};
  const Rows rows{{{3.0}, {-3.0}}};
  const CombineRow r = combine_row(lse, LogBase::kE, rows.ptrs(), 1);
  CHECK(r.weights.l2[0] == doctest::Approx(1.0).epsilon(1e-15));
  CHECK(r.out[0] == doctest::Approx(1.0).epsilon(1e-15));
  // The same numbers read as base 2 give a different answer.
  const CombineRow r2 = combine_row(lse, LogBase::k2, rows.ptrs(), 1);
  CHECK(r2.out[0] != doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("NaN and +inf LSE count as -inf and their data is never read") {
  for (double bad : {kNan, kInf, -kInf}) {
    CAPTURE(bad);
    const std::vector<SourceLse> lse = {{bad, false}, {5.0, false}, {bad, false}};
    const Rows rows{{{kNan, kNan}, {1.5, -0.25}, {kNan, kNan}}};
    const CombineRow r = combine_row(lse, LogBase::kE, rows.ptrs(), 2);
    CHECK(r.out[0] == 1.5);
    CHECK(r.out[1] == -0.25);
    CHECK(r.weights.weight[0] == 0.0);
    CHECK(r.weights.weight[1] == 1.0);
    CHECK(r.weights.l2[2] == -kInf);
  }
}

TEST_CASE("null pointers for zero-weight sources are fine") {
  const std::vector<SourceLse> lse = {{kNan, false}, {2.0, false}, {7.0, true}};
  const double x[2] = {4.0, 8.0};
  const std::vector<const double*> ptrs = {nullptr, x, nullptr};
  const CombineRow r = combine_row(lse, LogBase::k2, ptrs, 2);
  CHECK(r.out[0] == 4.0);
  CHECK(r.out[1] == 8.0);
}

TEST_CASE("all -inf (or masked) gives exact zeros") {
  const std::vector<SourceLse> lse = {{-kInf, false}, {kNan, false}, {3.0, true}, {kInf, false}};
  const Rows rows{{{kNan}, {kNan}, {kNan}, {kNan}}};
  const CombineRow r = combine_row(lse, LogBase::k2, rows.ptrs(), 1);
  CHECK(r.weights.all_masked);
  CHECK(r.out[0] == 0.0);
  CHECK_FALSE(std::signbit(r.out[0]));
  CHECK(r.abs_sum[0] == 0.0);
  float f[1] = {42.0f};
  combine_row_fp32(lse, LogBase::k2, rows.ptrs(), 1, f);
  CHECK(f[0] == 0.0f);
}

TEST_CASE("a masked row contributes nothing even with a huge finite LSE") {
  const std::vector<SourceLse> lse = {{100.0, true}, {1.0, false}};
  const Rows rows{{{kNan}, {-0.5}}};
  const CombineRow r = combine_row(lse, LogBase::k2, rows.ptrs(), 1);
  CHECK(r.out[0] == -0.5);
}

TEST_CASE("a dominant source") {
  // Gap of 40 in base 2: the small weight is 2^-40 / (1 + 2^-40).
  const std::vector<SourceLse> lse = {{10.0, false}, {-30.0, false}};
  const Rows rows{{{1.0}, {-1.0}}};
  const CombineRow r = combine_row(lse, LogBase::k2, rows.ptrs(), 1);
  const double small = 0x1p-40 / (1 + 0x1p-40);
  CHECK(r.weights.weight[1] == doctest::Approx(small).epsilon(1e-14));
  CHECK(r.out[0] == doctest::Approx(1.0 - 2 * small).epsilon(1e-15));
  CHECK(r.out[0] < 1.0);
  // A gap of 2000 underflows even in double: the weight is exactly 0.
  const std::vector<SourceLse> huge = {{1000.0, false}, {-1000.0, false}};
  const Rows rows2{{{1.0}, {kNan}}};
  const CombineRow r2 = combine_row(huge, LogBase::k2, rows2.ptrs(), 1);
  CHECK(r2.out[0] == 1.0);
  CHECK(r2.weights.lse_magnitude == 2000.0);
}

TEST_CASE("a single source passes its data through") {
  const std::vector<SourceLse> lse = {{-3.75, false}};
  const Rows rows{{{0.125, -7.0, 3.0}}};
  const CombineRow r = combine_row(lse, LogBase::kE, rows.ptrs(), 3);
  CHECK(r.out == rows.data[0]);
  float f[3];
  combine_row_fp32(lse, LogBase::kE, rows.ptrs(), 3, f);
  CHECK(f[0] == 0.125f);
  CHECK(f[1] == -7.0f);
}

TEST_CASE("the fp32 variant is close to float64 but computed in float") {
  const std::vector<SourceLse> lse = {{1.3, false}, {0.2, false}, {-2.1, false}, {kNan, false}};
  const Rows rows{{{0.1, 1.7}, {-0.3, 0.9}, {1.1, -1.9}, {kNan, kNan}}};
  const CombineRow r = combine_row(lse, LogBase::kE, rows.ptrs(), 2);
  float f[2];
  combine_row_fp32(lse, LogBase::kE, rows.ptrs(), 2, f);
  for (int d = 0; d < 2; ++d) {
    CHECK(std::isfinite(f[d]));
    CHECK(std::fabs(f[d] - r.out[d]) < 1e-6);
  }
}

}  // namespace
}  // namespace dcp
