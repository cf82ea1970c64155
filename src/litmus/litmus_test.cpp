// The litmus outcome classification, role draws, tallies and conclusions, on
// the host (the kernels themselves run only on the GPU: ci/gpu.sh litmus).
#include <doctest/doctest.h>

#include <array>
#include <memory>
#include <set>

#include "litmus_outcome.h"
#include "litmus_plan.h"
#include "litmus_report.h"

namespace dcp {

TEST_CASE("litmus: every (r0, r1) of each shape has exactly the textbook meaning") {
  using O = LitmusOutcome;
  // mp: T1 reads the flag into r0, the data into r1.
  CHECK(classify_litmus(LitmusShape::kMp, 1, 0) == O::kWeak);
  CHECK(classify_litmus(LitmusShape::kMp, 1, 1) == O::kFirstThenSecond);
  CHECK(classify_litmus(LitmusShape::kMp, 0, 0) == O::kSecondThenFirst);
  CHECK(classify_litmus(LitmusShape::kMp, 0, 1) == O::kInterleaved);
  // sb: both loads missing both stores is the weak outcome.
  CHECK(classify_litmus(LitmusShape::kSb, 0, 0) == O::kWeak);
  CHECK(classify_litmus(LitmusShape::kSb, 0, 1) == O::kFirstThenSecond);
  CHECK(classify_litmus(LitmusShape::kSb, 1, 0) == O::kSecondThenFirst);
  CHECK(classify_litmus(LitmusShape::kSb, 1, 1) == O::kInterleaved);
  // lb: both loads seeing the other's later store is the weak outcome.
  CHECK(classify_litmus(LitmusShape::kLb, 1, 1) == O::kWeak);
  CHECK(classify_litmus(LitmusShape::kLb, 0, 1) == O::kFirstThenSecond);
  CHECK(classify_litmus(LitmusShape::kLb, 1, 0) == O::kSecondThenFirst);
  CHECK(classify_litmus(LitmusShape::kLb, 0, 0) == O::kInterleaved);
  for (LitmusShape s : {LitmusShape::kMp, LitmusShape::kSb, LitmusShape::kLb}) {
    CHECK(classify_litmus(s, 2, 0) == O::kInvalid);
    CHECK(classify_litmus(s, 0, 7) == O::kInvalid);
  }
}

TEST_CASE("litmus: a counter sample is weak exactly when the data is older than the flag") {
  using C = CounterSample;
  CHECK(classify_counter_sample(5, 4, 10) == C::kWeak);
  CHECK(classify_counter_sample(10, 9, 10) == C::kWeak);  // even at the last round
  CHECK(classify_counter_sample(5, 5, 10) == C::kOverlap);
  CHECK(classify_counter_sample(5, 6, 10) == C::kOverlap);  // data of the next round already
  CHECK(classify_counter_sample(0, 0, 10) == C::kIdle);
  CHECK(classify_counter_sample(0, 3, 10) == C::kIdle);
  CHECK(classify_counter_sample(10, 10, 10) == C::kIdle);
  CHECK(classify_counter_sample(11, 11, 10) == C::kInvalid);
  CHECK(classify_counter_sample(3, 11, 10) == C::kInvalid);
}

TEST_CASE("litmus: role draws are permutations with the two roles in different blocks") {
  std::mt19937_64 rng(7);
  for (int instances : {256, 1000, 33792}) {
    const int block = 256;
    const auto roles = draw_roles(instances, block, rng);
    REQUIRE(roles.size() == static_cast<size_t>(2 * instances));
    CHECK(std::set<uint32_t>(roles.begin(), roles.end()).size() == roles.size());
    std::vector<int> where(roles.size());
    for (size_t t = 0; t < roles.size(); ++t) {
      REQUIRE(roles[t] < roles.size());
      where[roles[t]] = static_cast<int>(t);
    }
    for (int i = 0; i < instances; ++i) {
      CHECK(where[2 * i] / block != where[2 * i + 1] / block);
    }
  }
  CHECK_THROWS(draw_roles(100, 256, rng));  // one block cannot split them
  const auto again = draw_roles(1000, 256, *std::make_unique<std::mt19937_64>(3));
  CHECK(again == draw_roles(1000, 256, *std::make_unique<std::mt19937_64>(3)));  // seeded
}

TEST_CASE("litmus: tallies count outcomes and rates per million of what could be weak") {
  LitmusTally one;
  tally_oneshot(LitmusShape::kMp, {1, 0, 1, 1, 0, 1, 0, 0, 3, 0}, one);
  CHECK(one.iterations == 5);
  CHECK(one.weak == 1);
  CHECK(one.overlapped == 1);
  CHECK(one.invalid == 1);
  CHECK(one.weak_per_million() == doctest::Approx(200000.0));

  LitmusTally counter;
  const unsigned long long counts[4] = {1000, 97, 3, 0};  // idle, overlap, weak, invalid
  tally_counter(counts, counter);
  CHECK(counter.counter);
  CHECK(counter.iterations == 1100);
  CHECK(counter.weak_per_million() == doctest::Approx(30000.0));  // 3 of the 100 mid-write
}

namespace {

LitmusRow row_of(LitmusShape shape, LitmusOrder order, LitmusPlacement placement, bool sys) {
  LitmusRow row;
  row.test = {shape, order, placement, sys};
  return row;
}

LitmusRow calibration_row(const LitmusStress& stress) {
  LitmusRow row;
  row.test = calibration_test();
  row.stress = stress;
  return row;
}

}  // namespace

TEST_CASE("litmus: conclusions say where weak outcomes showed and flag forbidden ones") {
  LitmusReport r;
  LitmusRow blocks = row_of(LitmusShape::kMp, LitmusOrder::kRelaxed, LitmusPlacement::kBlocks, false);
  blocks.tally.iterations = 1'000'000;
  blocks.tally.weak = 400;
  LitmusRow procs = row_of(LitmusShape::kMp, LitmusOrder::kRelaxed, LitmusPlacement::kProcesses, true);
  tally_counter(std::array<unsigned long long, 4>{10, 5000, 0, 0}.data(), procs.tally);
  r.rows = {blocks, procs};
  bool contradiction = true;
  auto lines = litmus_conclusions(r, &contradiction);
  CHECK_FALSE(contradiction);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].find("between blocks: weak outcomes observed, up to 400.0 per million") !=
        std::string::npos);
  CHECK(lines[1].find("between processes: no weak outcome in any setting (5000 samples taken "
                      "mid-write") != std::string::npos);

  LitmusRow fenced = row_of(LitmusShape::kMp, LitmusOrder::kFenced, LitmusPlacement::kBlocks, false);
  fenced.tally.iterations = 10;
  fenced.tally.weak = 1;
  r.rows.push_back(fenced);
  lines = litmus_conclusions(r, &contradiction);
  CHECK(contradiction);
  CHECK(lines.back().find("CONTRADICTION: mp fenced .gpu") != std::string::npos);
  CHECK(litmus_json(r)["contradiction"] == true);
}

TEST_CASE("litmus: the best stress is the calibration row with the highest rate") {
  LitmusRow none = calibration_row(LitmusStress{});
  none.tally.iterations = 1000;
  none.tally.weak = 1;
  const auto sweep = stress_sweep(132);
  CHECK(sweep.size() == 8);
  LitmusRow a = calibration_row(sweep[0]);
  a.tally.iterations = 1000;
  a.tally.weak = 3;
  LitmusRow b = calibration_row(sweep[5]);
  b.tally.iterations = 1000;
  b.tally.weak = 2;
  CHECK(stress_name(best_stress({none, a, b})) == stress_name(sweep[0]));
  CHECK(stress_name(best_stress({none})) == "none");
  CHECK(stress_name(sweep[0]) == "st-st 8 KiB x132 blocks");
  CHECK(stress_name(sweep[1]) == "st-st 4 MiB x132 blocks");
}

}  // namespace dcp
