#include "phase_summary.h"

#include <doctest/doctest.h>

#include "results.h"

namespace dcp {
namespace {

CaseResult case_with(std::initializer_list<std::pair<int, PhaseTimes>> ranks) {
  CaseResult r;
  for (const auto& [rank, phases] : ranks) {
    RankCaseResult k;
    k.rank = rank;
    k.phases = phases;
    r.ranks.push_back(k);
  }
  return r;
}

TEST_CASE("phase totals: per-rank sums, the mean, and the phase that bounds the run") {
  PhaseTotals totals;
  CHECK(totals.empty());
  CHECK(totals.bound_by().empty());
  PhaseTimes a;
  a.generate_ms = 100;
  a.wait_ms = 300;
  a.check_ms = 5000;  // beside the calls: never the bound
  a.check_wait_ms = 200;
  PhaseTimes b = a;
  b.wait_ms = 500;
  totals.add(case_with({{0, a}, {1, b}}));
  totals.add(case_with({{0, a}, {1, b}}));
  CHECK(totals.bound_by() == "wait");
  const auto j = totals.to_json();
  REQUIRE(j["per_rank"].size() == 2);
  CHECK(j["per_rank"][0]["rank"] == 0);
  CHECK(j["per_rank"][0]["cases"] == 2);
  CHECK(j["per_rank"][0]["wait_ms"] == doctest::Approx(600));
  CHECK(j["per_rank"][1]["wait_ms"] == doctest::Approx(1000));
  CHECK(j["bound_by"] == "wait");
  const std::string line = totals.line();
  CHECK(line.find("mean of 2 ranks") != std::string::npos);
  CHECK(line.find("wait 0.80") != std::string::npos);  // (0.6 + 1.0) / 2 s
  CHECK(line.find("check 10.00 (waited for 0.40)") != std::string::npos);
  CHECK(line.find("bound by wait") != std::string::npos);
  // Waiting for the supervisor between cases is on the path too.
  PhaseTimes idle;
  idle.idle_ms = 5000;
  totals.add(case_with({{0, idle}, {1, idle}}));
  CHECK(totals.bound_by() == "idle");
}

TEST_CASE("phase times travel through the worker protocol's JSON unchanged") {
  RankCaseResult r;
  r.phases.generate_ms = 1.5;
  r.phases.stage_ms = 2.5;
  r.phases.launch_ms = 3.5;
  r.phases.wait_ms = 4.5;
  r.phases.collect_ms = 5.5;
  r.phases.check_ms = 6.5;
  r.phases.check_wait_ms = 7.5;
  r.phases.barrier_ms = 8.5;
  r.phases.idle_ms = 9.5;
  const RankCaseResult back = nlohmann::json(r).get<RankCaseResult>();
  CHECK(back.phases.generate_ms == 1.5);
  CHECK(back.phases.stage_ms == 2.5);
  CHECK(back.phases.launch_ms == 3.5);
  CHECK(back.phases.wait_ms == 4.5);
  CHECK(back.phases.collect_ms == 5.5);
  CHECK(back.phases.check_ms == 6.5);
  CHECK(back.phases.check_wait_ms == 7.5);
  CHECK(back.phases.barrier_ms == 8.5);
  CHECK(back.phases.idle_ms == 9.5);
  // An older build's phases (no idle_ms) read as 0.
  nlohmann::json old = nlohmann::json(r);
  old["phases"].erase("idle_ms");
  CHECK(old.get<RankCaseResult>().phases.idle_ms == 0);
}

}  // namespace
}  // namespace dcp
