// The shrinker against a fake runner (no processes), and the duration parser.
#include "shrinker.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "duration.h"
#include "errors.h"
#include "geometry.h"
#include "random_case.h"
#include "shrink.h"

namespace dcp {
namespace {

Case big_graph_case() {
  Case c;
  c.dcp_size = 2;
  c.geometry = custom_geometry(4, 64, 128);
  c.num_tokens = 100;
  c.out_pad_elems = 64;
  c.mode = ExecMode::kGraph;
  c.num_calls = 8;
  c.seed = 0x1234;
  return c;
}

// Simpler variants, most-reducing first (the shape of cases/shrink.h's
// candidates, restricted to the axes this test's fake bug depends on).
std::vector<Case> toy_candidates(const Case& c) {
  std::vector<Case> out;
  auto add = [&](auto mutate) {
    Case d = c;
    mutate(d);
    if (!(d == c)) out.push_back(d);
  };
  if (c.num_tokens > 1) {
    add([](Case& d) { d.num_tokens /= 2; });
    add([](Case& d) { d.num_tokens -= 1; });
  }
  if (c.mode != ExecMode::kEager) add([](Case& d) { d.mode = ExecMode::kEager; });
  if (c.num_calls > 1) {
    add([](Case& d) { d.num_calls /= 2; });
    add([](Case& d) { d.num_calls -= 1; });
  }
  if (c.out_pad_elems > 0) add([](Case& d) { d.out_pad_elems = 0; });
  return out;
}

// kError results carry a rank that blames the kernel, as a hang or trap does.
CaseResult result_with(CaseStatus s) {
  CaseResult r;
  r.status = s;
  if (s == CaseStatus::kFail) r.failure = FailureKind::kMismatch;
  if (s == CaseStatus::kError) {
    RankCaseResult rank;
    rank.error = "rank 1 waits for source 0 (epoch 3, slot 0): deadline";
    rank.failure = FailureKind::kHang;
    r.ranks.push_back(rank);
    r.failure = rank.failure;
  }
  return r;
}

// The fake bug: fails iff T >= 5 and the case runs as a CUDA graph.
struct FakeRunner {
  int num_runs = 0;
  int num_failures = 0;
  CaseStatus failure_status = CaseStatus::kFail;
  CaseResult operator()(const Case& c) {
    ++num_runs;
    const bool fails = c.num_tokens >= 5 && c.mode == ExecMode::kGraph;
    num_failures += fails ? 1 : 0;
    return result_with(fails ? failure_status : CaseStatus::kPass);
  }
};

}  // namespace

TEST_CASE("shrinker reduces a graph-only failure to the minimal failing case") {
  FakeRunner fake;
  const Case start = big_graph_case();
  const CaseResult start_result = fake(start);
  REQUIRE(start_result.status == CaseStatus::kFail);
  fake = FakeRunner{};

  const ShrinkOutcome out =
      shrink_case(start, start_result, std::ref(fake), toy_candidates, ShrinkLimits{});

  Case want = start;
  want.num_tokens = 5;  // 4 passes: the boundary is found exactly
  want.num_calls = 1;
  want.out_pad_elems = 0;
  CHECK(out.minimal == want);
  CHECK(out.minimal.mode == ExecMode::kGraph);  // eager would pass, so it stays
  CHECK(out.reached_fixpoint);
  CHECK(out.stop_reason == "fixpoint");
  CHECK(out.minimal_result.status == CaseStatus::kFail);
  // Every accepted step is a run that failed; every attempt is a run.
  CHECK(out.num_steps == fake.num_failures);
  CHECK(out.num_attempts == fake.num_runs);
  CHECK(out.num_steps >= 3);  // at least tokens, calls and padding shrank
  // At the fixpoint no candidate of the minimal case fails.
  for (const Case& cand : toy_candidates(out.minimal)) {
    CHECK(FakeRunner{}(cand).status == CaseStatus::kPass);
  }
}

TEST_CASE("shrinker with the real candidates reduces random scenarios to the fake bug's core") {
  // Every random scenario whose bug condition holds shrinks to the same
  // minimal shape: the simplest case that still has T >= 5 in graph mode.
  const Geometry g = custom_geometry(2, 64, 32);
  int num_shrunk = 0;
  for (uint64_t index = 0; index < 64; ++index) {
    Case start = random_case(7, index, 4, g);
    start.mode = ExecMode::kGraph;
    if (start.num_tokens < 5) continue;
    CAPTURE(format_case_id(start));
    FakeRunner fake;
    const ShrinkOutcome out = shrink_case(start, result_with(CaseStatus::kFail), std::ref(fake),
                                          shrink_candidates, ShrinkLimits{});
    REQUIRE(out.reached_fixpoint);
    CHECK(out.minimal.num_tokens == 5);
    CHECK(out.minimal.mode == ExecMode::kGraph);
    CHECK(out.minimal.num_calls == 1);
    CHECK(out.minimal.num_layers == 1);
    CHECK(out.minimal.dcp_size == 2);
    CHECK(out.minimal.out_pad_elems + out.minimal.lse_pad_elems == 0);
    CHECK_FALSE(out.minimal.skew);
    CHECK(out.minimal.num_slots == 1);
    CHECK_FALSE(out.minimal.epoch_start.has_value());
    CHECK(out.minimal.special == SpecialLse::kNone);
    CHECK(out.minimal.empty == EmptyPattern::kNone);
    CHECK(out.num_steps == fake.num_failures);
    CHECK(out.num_attempts == fake.num_runs);
    CHECK(out.num_attempts <= ShrinkLimits{}.max_attempts);
    CHECK(shrink_measure(out.minimal) < shrink_measure(start));
    ++num_shrunk;
  }
  CHECK(num_shrunk >= 10);  // the loop really exercised the shrinker
}

TEST_CASE("shrinker keeps the failure class: a mismatch never shrinks into an error") {
  const Case start = big_graph_case();
  // Fewer tokens turn the mismatch into a hang (kError): those are rejected.
  auto runner = [](const Case& c) {
    if (c.mode != ExecMode::kGraph) return result_with(CaseStatus::kPass);
    return result_with(c.num_tokens >= 50 ? CaseStatus::kFail : CaseStatus::kError);
  };
  const ShrinkOutcome out =
      shrink_case(start, result_with(CaseStatus::kFail), runner, toy_candidates);
  CHECK(out.minimal.num_tokens == 50);
  CHECK(out.minimal_result.status == CaseStatus::kFail);
  CHECK(same_failure(result_with(CaseStatus::kError), result_with(CaseStatus::kError)));
  CHECK_FALSE(same_failure(result_with(CaseStatus::kFail), result_with(CaseStatus::kError)));
  CHECK_FALSE(same_failure(result_with(CaseStatus::kFail), result_with(CaseStatus::kSkipped)));
  CHECK_FALSE(same_failure(result_with(CaseStatus::kFail), result_with(CaseStatus::kPass)));
  CaseResult harness = result_with(CaseStatus::kError);
  harness.ranks[0].failure = FailureKind::kHarness;
  harness.failure = FailureKind::kHarness;
  CHECK_FALSE(same_failure(harness, harness));
  CHECK_FALSE(is_kernel_failure(harness));
}

TEST_CASE("shrinker stops at the attempt budget and at the time budget") {
  const Case start = big_graph_case();
  FakeRunner fake;
  ShrinkLimits limits;
  limits.max_attempts = 3;
  ShrinkOutcome out =
      shrink_case(start, result_with(CaseStatus::kFail), std::ref(fake), toy_candidates, limits);
  CHECK(out.num_attempts == 3);
  CHECK(fake.num_runs == 3);
  CHECK_FALSE(out.reached_fixpoint);
  CHECK(out.stop_reason == "attempt budget (3)");
  CHECK(out.minimal.num_tokens < start.num_tokens);  // it kept what it had found

  FakeRunner idle;
  limits = ShrinkLimits{};
  limits.max_seconds = 0;
  out = shrink_case(start, result_with(CaseStatus::kFail), std::ref(idle), toy_candidates, limits);
  CHECK(idle.num_runs == 0);
  CHECK(out.minimal == start);
  CHECK(out.num_steps == 0);
  CHECK_FALSE(out.reached_fixpoint);

  FakeRunner cancelled_run;
  limits = ShrinkLimits{};
  limits.cancelled = [&cancelled_run] { return cancelled_run.num_runs >= 2; };
  out = shrink_case(start, result_with(CaseStatus::kFail), std::ref(cancelled_run), toy_candidates,
                    limits);
  CHECK(cancelled_run.num_runs == 2);
  CHECK(out.stop_reason == "interrupted");
  CHECK_FALSE(out.reached_fixpoint);
}

TEST_CASE("shrinker terminates on a cyclic candidate generator and rejects passing input") {
  const Case a = big_graph_case();
  Case b = a;
  b.num_tokens = 99;
  // a -> b -> a -> ...: both fail; the visited set must break the cycle.
  auto cyclic = [&](const Case& c) { return std::vector<Case>{c == a ? b : a}; };
  int runs = 0;
  auto always_fails = [&](const Case&) {
    ++runs;
    return result_with(CaseStatus::kFail);
  };
  const ShrinkOutcome out = shrink_case(a, result_with(CaseStatus::kFail), always_fails, cyclic);
  CHECK(out.minimal == b);
  CHECK(out.num_steps == 1);
  CHECK(runs == 1);
  CHECK(out.reached_fixpoint);

  CHECK_THROWS_AS(shrink_case(a, result_with(CaseStatus::kPass), always_fails, cyclic),
                  std::invalid_argument);
}

TEST_CASE("durations: units, combinations and plain seconds") {
  CHECK(parse_duration_seconds("90s") == 90);
  CHECK(parse_duration_seconds("10m") == 600);
  CHECK(parse_duration_seconds("1h") == 3600);
  CHECK(parse_duration_seconds("1h30m") == 5400);
  CHECK(parse_duration_seconds("2m5s") == 125);
  CHECK(parse_duration_seconds("2.5m") == 150);
  CHECK(parse_duration_seconds("45") == 45);
  CHECK(parse_duration_seconds("0.5") == 0.5);
  CHECK(parse_duration_seconds("1d") == 86400);
}

TEST_CASE("durations: bad values are usage errors") {
  for (const char* bad :
       {"",     "0",    "0s",  "-5", "-5s",   "10x",  "m",    "s10", "1m30", "30s1m",
        "1m1m", "10ss", "1e3", ".",  "1..5s", " 10s", "10s ", "8d",  "nan",  "inf"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_duration_seconds(bad), UsageError);
  }
}

TEST_CASE("durations: formatting for status lines") {
  CHECK(format_elapsed_s(0.5) == "0.5s");
  CHECK(format_elapsed_s(42) == "42s");
  CHECK(format_elapsed_s(125) == "2m05s");
  CHECK(format_elapsed_s(3723) == "1h02m03s");
}

}  // namespace dcp
