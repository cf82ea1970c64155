// The self-test engine against a fake session: verdicts, counting, the table
// and the exit-code rules, without processes.
#include "selftest.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>

#include "errors.h"
#include "families.h"
#include "mutants.h"
#include "pressure_rule.h"

namespace dcp {
namespace {

// How the fake kernel variant behaves on one case: pass, mismatch, or an error
// (hang/crash/trap) that kills the session like the real supervisor does.
struct FakeOutcome {
  CaseStatus status = CaseStatus::kPass;
  std::string message;
  FailureKind kind = FailureKind::kNone;  // kError's kind (kFail: a mismatch)
};
using FakeBehavior = std::function<FakeOutcome(int mutant, bool upstream, int case_idx)>;

class FakeSession : public SelftestSession {
 public:
  FakeSession(int mutant, bool upstream, const FakeBehavior& behavior, EnvironmentInfo env,
              std::vector<std::string>* log)
      : mutant_(mutant),
        upstream_(upstream),
        behavior_(behavior),
        env_(std::move(env)),
        log_(log) {}
  CaseResult run_case(const Case& c, const std::string& suite) override {
    CaseResult r;
    r.case_id = "case" + std::to_string(c.seed);
    r.suite = suite;
    if (dead_) {
      r.status = CaseStatus::kSkipped;
      return r;
    }
    log_->push_back(fmt::format("m{}{} {}", mutant_, upstream_ ? "u" : "", r.case_id));
    FakeOutcome o = behavior_(mutant_, upstream_, static_cast<int>(c.seed));
    r.status = o.status;
    r.message = o.message;
    r.failure = o.status == CaseStatus::kFail ? FailureKind::kMismatch : o.kind;
    r.replay = "dcp-check replay w2-" + r.case_id;
    if (o.status == CaseStatus::kFail) {
      RankCaseResult rank;
      rank.num_mismatches = 3;
      r.ranks.push_back(rank);
    }
    if (o.status == CaseStatus::kError) dead_ = true;
    return r;
  }
  bool dead() const override { return dead_; }
  const EnvironmentInfo& environment() const override { return env_; }

 private:
  int mutant_;
  bool upstream_;
  FakeBehavior behavior_;
  EnvironmentInfo env_;
  std::vector<std::string>* log_;
  bool dead_ = false;
};

struct Harness {
  FakeBehavior behavior;
  bool share_gpu = true;
  std::vector<std::string> log;       // every case run: "m<mutant>[u] case<i>"
  std::vector<std::string> sessions;  // every session started: "m<mutant>[u]"

  SessionFactory factory() {
    return [this](int mutant, const CheckProfile& profile,
                  const Geometry& geometry) -> std::unique_ptr<SelftestSession> {
      sessions.push_back(fmt::format("m{}{}{}", mutant, profile.upstream ? "u" : "",
                                     geometry.name.empty() ? "" : ":" + geometry.name));
      EnvironmentInfo env;
      env.backend = "gpu";
      env.ranks_share_gpu = share_gpu;
      return std::make_unique<FakeSession>(mutant, profile.upstream, behavior, env, &log);
    };
  }
};

std::vector<Case> make_cases(int n) {
  std::vector<Case> cases(n);
  for (int i = 0; i < n; ++i) cases[i].seed = static_cast<uint64_t>(i);
  return cases;
}

MutantInfo mutant(int id, std::string name, bool catchable_on_shared = true) {
  MutantInfo m;
  m.id = id;
  m.name = std::move(name);
  m.kind = catchable_on_shared ? "protocol" : "memory-ordering";
  m.description = "a broken variant";
  m.catchable_on_shared_gpu = catchable_on_shared;
  if (!catchable_on_shared) m.uncatchable_reason = "ranks share one GPU";
  return m;
}

SelftestPlan make_plan(int num_cases, int num_upstream, std::vector<MutantInfo> mutants) {
  SelftestPlan plan;
  plan.suite = "smoke";
  plan.cases = make_cases(num_cases);
  plan.upstream_cases = make_cases(num_upstream);
  plan.mutants = std::move(mutants);
  return plan;
}

FakeOutcome fail() { return {CaseStatus::kFail, "rank 0 token 1: got 1, want 2"}; }
FakeOutcome pass() { return {}; }

}  // namespace

TEST_CASE("every mutant detected: exit 0, counts and first case recorded") {
  Harness h;
  // Mutant 1 fails cases 2 and 3 (mismatch); mutant 2 fails every case.
  h.behavior = [](int m, bool up, int i) {
    if (m == 1) return i >= 2 ? fail() : pass();
    if (m == 2) return fail();
    return pass();
  };
  auto report =
      run_selftest(make_plan(4, 0, {mutant(1, "late"), mutant(2, "always")}), h.factory());
  CHECK(report.correct_passed);
  REQUIRE(report.mutants.size() == 2);
  CHECK(report.mutants[0].verdict == MutantVerdict::kDetected);
  CHECK(report.mutants[0].strict.first_case == "case2");
  CHECK(report.mutants[0].strict.num_caught == 2);
  CHECK(report.mutants[0].strict.num_run == 4);
  CHECK(report.mutants[0].strict.how == FailureKind::kMismatch);
  CHECK(report.mutants[1].strict.num_caught == 4);
  CHECK(report.num_detected() == 2);
  CHECK(report.exit_code() == kExitPass);
  // One fresh session for the correct kernel and each mutant; no upstream column.
  CHECK(h.sessions == std::vector<std::string>{"m0", "m1", "m2"});
  CHECK_FALSE(report.mutants[0].upstream.has_value());
  REQUIRE(report.environment.has_value());
  CHECK(report.environment->backend == "gpu");
  CHECK(report.ranks_share_gpu);
  const std::string table = format_selftest_table(report, "dcp-check selftest");
  CHECK(table.find("late") != std::string::npos);
  CHECK(table.find("2/4") != std::string::npos);
  CHECK(table.find("dcp-check selftest --mutants late --fast --no-upstream") != std::string::npos);
  CHECK(table.find("case2") != std::string::npos);  // the first detecting case
  CHECK(selftest_verdict(report).rfind("selftest: 2 of 2 mutants detected, 0 survived (", 0) == 0);
}

TEST_CASE("a catchable survivor fails the selftest") {
  Harness h;
  h.behavior = [](int m, bool, int) { return m == 1 ? fail() : pass(); };
  auto report =
      run_selftest(make_plan(3, 0, {mutant(1, "caught"), mutant(2, "sneaky")}), h.factory());
  CHECK(report.mutants[1].verdict == MutantVerdict::kSurvived);
  CHECK(report.num_survived() == 1);
  CHECK(report.exit_code() == kExitKernelFailure);
  const std::string table = format_selftest_table(report, "x");
  CHECK(table.find("SURVIVED: sneaky") != std::string::npos);
  CHECK(selftest_verdict(report).rfind("selftest: 1 of 2 mutants detected, 1 survived (", 0) == 0);
}

TEST_CASE("an uncatchable mutant that survives is reported, never counted as caught") {
  Harness h;
  h.share_gpu = true;
  h.behavior = [](int, bool, int) { return pass(); };
  auto report = run_selftest(make_plan(2, 0, {mutant(1, "relaxed", false)}), h.factory());
  REQUIRE(report.mutants.size() == 1);
  CHECK(report.mutants[0].verdict == MutantVerdict::kNotCatchableHere);
  CHECK(report.mutants[0].note == "not catchable here: ranks share one GPU");
  CHECK(report.num_detected() == 0);
  CHECK(report.num_not_catchable_here() == 1);
  CHECK(report.exit_code() == kExitPass);  // forgiven only because it cannot be exposed here
  // The mutant was still run.
  CHECK(h.sessions == std::vector<std::string>{"m0", "m1"});

  // The same mutant on distinct GPUs must be caught: surviving there fails.
  Harness distinct;
  distinct.share_gpu = false;
  distinct.behavior = h.behavior;
  auto report2 = run_selftest(make_plan(2, 0, {mutant(1, "relaxed", false)}), distinct.factory());
  CHECK(report2.mutants[0].verdict == MutantVerdict::kSurvived);
  CHECK(report2.exit_code() == kExitKernelFailure);
}

TEST_CASE("an uncatchable mutant that is detected anyway counts as detected") {
  Harness h;
  h.behavior = [](int m, bool, int) { return m == 1 ? fail() : pass(); };
  auto report = run_selftest(make_plan(2, 0, {mutant(1, "relaxed", false)}), h.factory());
  CHECK(report.mutants[0].verdict == MutantVerdict::kDetected);
  CHECK(report.mutants[0].note.find("although") != std::string::npos);
  CHECK(report.exit_code() == kExitPass);
}

TEST_CASE("a correct kernel that fails stops the selftest with exit 1") {
  Harness h;
  h.behavior = [](int m, bool, int i) { return i == 1 ? fail() : pass(); };
  auto report = run_selftest(make_plan(3, 2, {mutant(1, "a")}), h.factory());
  CHECK_FALSE(report.correct_passed);
  CHECK(report.mutants.empty());
  CHECK(h.sessions == std::vector<std::string>{"m0"});  // neither upstream nor mutants ran
  CHECK(report.correct.num_caught == 1);
  CHECK(report.correct.num_run == 3);  // every case is run to report them all
  REQUIRE(report.correct_failures.size() == 1);
  CHECK(report.exit_code() == kExitKernelFailure);
  const std::string text = format_selftest_table(report, "x");
  CHECK(text.find("the correct kernel failed 1 of 3 cases") != std::string::npos);
  CHECK(selftest_verdict(report).find("the correct kernel did not pass, so no mutant ran") !=
        std::string::npos);
  CHECK(text.find("replay: dcp-check replay w2-case1") != std::string::npos);
}

TEST_CASE("a correct kernel failing the upstream profile also fails the selftest") {
  Harness h;
  h.behavior = [](int, bool up, int i) { return up && i == 0 ? fail() : pass(); };
  auto report = run_selftest(make_plan(2, 2, {mutant(1, "a")}), h.factory());
  CHECK_FALSE(report.correct_passed);
  CHECK(report.mutants.empty());
  CHECK(report.exit_code() == kExitKernelFailure);
  CHECK(format_selftest_table(report, "x").find("upstream profile") != std::string::npos);
}

TEST_CASE("a hang is a detection and ends that mutant's session") {
  Harness h;
  h.behavior = [](int m, bool, int i) {
    if (m == 1 && i == 1) {
      return FakeOutcome{CaseStatus::kError,
                         "hang: rank 1 waiting on source 0, epoch 3, slot 0 (deadline 5 s)",
                         FailureKind::kHang};
    }
    return pass();
  };
  auto report =
      run_selftest(make_plan(5, 0, {mutant(1, "one-parity"), mutant(2, "x")}), h.factory());
  const auto& m = report.mutants[0];
  CHECK(m.verdict == MutantVerdict::kDetected);
  CHECK(m.strict.how == FailureKind::kHang);
  CHECK(m.strict.num_run == 2);
  CHECK(m.strict.num_caught == 1);
  CHECK(m.strict.stopped == "the hang ended the session");
  // The next mutant gets a fresh session and runs every case.
  CHECK(report.mutants[1].strict.num_run == 5);
  CHECK(format_selftest_table(report, "x").find("1/2 (of 5)") != std::string::npos);
}

TEST_CASE("--fast stops a mutant at its first detection") {
  Harness h;
  h.behavior = [](int m, bool, int) { return m == 1 ? fail() : pass(); };
  auto plan = make_plan(4, 0, {mutant(1, "a")});
  plan.fast = true;
  auto report = run_selftest(plan, h.factory());
  CHECK(report.mutants[0].strict.num_run == 1);
  CHECK(report.mutants[0].strict.num_caught == 1);
  CHECK(report.correct.num_run == 4);  // the correct kernel always runs everything
}

TEST_CASE("the upstream column records what the weaker test misses") {
  Harness h;
  // Mutant 1: strict catches it, upstream does not (an error below 3e-2).
  // Mutant 2: both catch it.
  h.behavior = [](int m, bool up, int) {
    if (m == 1) return up ? pass() : fail();
    if (m == 2) return fail();
    return pass();
  };
  auto report =
      run_selftest(make_plan(3, 2, {mutant(1, "subtle"), mutant(2, "gross")}), h.factory());
  REQUIRE(report.correct_upstream.has_value());
  CHECK(report.correct_passed);
  REQUIRE(report.mutants[0].upstream.has_value());
  CHECK_FALSE(report.mutants[0].upstream->detected);
  CHECK(report.mutants[0].upstream->num_run == 2);
  CHECK(report.mutants[1].upstream->detected);
  CHECK(report.mutants[1].upstream->num_run == 1);  // stops at the first detection
  CHECK(report.exit_code() == kExitPass);  // the upstream column never decides the exit code
  CHECK(h.sessions == std::vector<std::string>{"m0", "m0u", "m1", "m1u", "m2", "m2u"});
  const std::string table = format_selftest_table(report, "x");
  CHECK(table.find("MISSED") != std::string::npos);
  CHECK(table.find("upstream profile misses 1 of 2: subtle") != std::string::npos);
}

TEST_CASE("a mutant that breaks session start-up is detected by the fault's kind") {
  Harness h;
  h.behavior = [](int, bool, int) { return pass(); };
  auto inner = h.factory();
  SessionFactory factory = [&](int m, const CheckProfile& p, const Geometry& g) {
    if (m == 1) throw KernelFault("worker 1 died during workspace set-up", FailureKind::kCrash);
    return inner(m, p, g);
  };
  auto report = run_selftest(make_plan(2, 0, {mutant(1, "boom")}), factory);
  CHECK(report.mutants[0].verdict == MutantVerdict::kDetected);
  CHECK(report.mutants[0].strict.how == FailureKind::kCrash);
  CHECK(report.mutants[0].strict.first_case == "(start-up)");
}

TEST_CASE("a harness error propagates instead of counting as a detection") {
  Harness h;
  h.behavior = [](int, bool, int) { return pass(); };
  auto inner = h.factory();
  SessionFactory factory = [&](int m, const CheckProfile& p, const Geometry& g) {
    if (m == 1) throw HarnessError("socket failed");
    return inner(m, p, g);
  };
  CHECK_THROWS_AS(run_selftest(make_plan(2, 0, {mutant(1, "a")}), factory), HarnessError);
  // What completed before the error stays in the caller's report (its partial JSON).
  SelftestReport partial;
  CHECK_THROWS_AS(run_selftest(make_plan(2, 0, {mutant(1, "a")}), factory, partial), HarnessError);
  CHECK(partial.correct_passed);
  CHECK(partial.correct.num_run == 2);
  CHECK(partial.mutants.empty());
}

TEST_CASE("cases of different geometries run in separate sessions") {
  Harness h;
  h.behavior = [](int m, bool, int i) { return m == 1 && i == 3 ? fail() : pass(); };
  auto plan = make_plan(4, 0, {mutant(1, "a")});
  Geometry other;
  other.name = "other";
  plan.cases[1].geometry = other;
  plan.cases[3].geometry = other;
  auto report = run_selftest(plan, h.factory());
  CHECK(report.correct_passed);
  CHECK(h.sessions == std::vector<std::string>{"m0", "m0:other", "m1", "m1:other"});
  // Suite order within each geometry, geometries in order of first appearance.
  CHECK(h.log == std::vector<std::string>{"m0 case0", "m0 case2", "m0 case1", "m0 case3",
                                          "m1 case0", "m1 case2", "m1 case1", "m1 case3"});
  CHECK(report.mutants[0].strict.first_case == "case3");
  CHECK(report.mutants[0].strict.num_run == 4);
}

TEST_CASE("a harness failure in a mutant's run is not a detection: exit 3, and it says so") {
  for (FailureKind kind : {FailureKind::kHarness, FailureKind::kWorkerDied}) {
    Harness h;
    h.behavior = [kind](int m, bool, int) {
      return m == 1 ? FakeOutcome{CaseStatus::kError, "worker could not map a segment | -", kind}
                    : pass();
    };
    auto report = run_selftest(make_plan(2, 0, {mutant(1, "a")}), h.factory());
    CHECK(report.mutants[0].verdict == MutantVerdict::kHarnessError);
    CHECK_FALSE(report.mutants[0].strict.detected);
    CHECK(report.mutants[0].strict.harness == kind);
    CHECK(report.mutants[0].note.find("HARNESS ERROR") != std::string::npos);
    CHECK(report.exit_code() == 3);
    CHECK(format_selftest_table(report, "x").find("HARNESS ERROR: a") != std::string::npos);
  }
}

TEST_CASE("a harness failure on the correct kernel: mutants not run, exit 3") {
  Harness h;
  h.behavior = [](int m, bool, int i) {
    return m == 0 && i == 1
               ? FakeOutcome{CaseStatus::kError, "socket closed", FailureKind::kHarness}
               : pass();
  };
  auto report = run_selftest(make_plan(3, 0, {mutant(1, "a")}), h.factory());
  CHECK_FALSE(report.correct_passed);
  CHECK(report.mutants.empty());
  CHECK(report.exit_code() == 3);
  CHECK(format_selftest_table(report, "x").find("failed in the harness (harness: socket closed)") !=
        std::string::npos);
}

TEST_CASE("select_mutants picks by name or id and rejects unknown names") {
  std::vector<MutantInfo> all = {mutant(1, "early-signal"), mutant(2, "one-parity"),
                                 mutant(3, "relaxed", false)};
  CHECK(select_mutants(all, "").size() == 3);
  auto picked = select_mutants(all, "one-parity,1,one-parity");
  REQUIRE(picked.size() == 2);
  CHECK(picked[0].name == "one-parity");
  CHECK(picked[1].name == "early-signal");
  CHECK_THROWS_AS(select_mutants(all, "nope"), UsageError);
  CHECK_THROWS_AS(select_mutants(all, ","), UsageError);
}

TEST_CASE("a mutant whose family lives in another suite is not catchable in the default one") {
  MutantInfo m = mutant(1, "spinning");
  m.family = "sm-pressure";
  m.suite = "pressure";
  EnvironmentInfo env;
  CHECK(why_not_catchable_in(m, env, "default") ==
        "its sm-pressure cases are in --suite pressure, not in suite default");
  CHECK(why_not_catchable_in(m, env, "pressure").empty());
  m.suite.clear();
  CHECK(why_not_catchable_in(m, env, "default").empty());
}

TEST_CASE("SM pressure: skipped, and its mutant not catchable, with > 2 ranks per GPU under MPS") {
  CHECK(most_ranks_per_gpu({0, 0, 0, 0}) == 4);
  CHECK(most_ranks_per_gpu({0, 1, 0, 1}) == 2);
  CHECK(most_ranks_per_gpu({0, 1, 2, 3}) == 1);
  EnvironmentInfo env;
  env.ranks_share_gpu = true;
  env.rank_gpu = {0, 0, 0, 0};
  env.mps_mode = "off";
  CHECK(pressure_unrunnable_reason(env).empty());  // time-sliced ranks run it
  env.mps_mode = "on: private daemon (25% of SMs per rank)";
  CHECK(pressure_unrunnable_reason(env).starts_with("SM pressure with 4 ranks"));
  env.rank_gpu = {0, 0};
  CHECK(pressure_unrunnable_reason(env).empty());
  env.rank_gpu = {0, 0, 0, 0};
  MutantInfo m = mutant(1, "spinning");
  m.family = "sm-pressure";
  m.needs_concurrent_ranks = true;
  CHECK(why_not_catchable_here(m, env).starts_with("its cases are skipped: SM pressure with 4"));
  env.rank_gpu = {0, 0};
  CHECK(why_not_catchable_here(m, env).empty());
  MutantInfo other = mutant(2, "other");
  other.family = "graph-set";
  env.rank_gpu = {0, 0, 0, 0};
  CHECK(why_not_catchable_here(other, env).empty());
}

TEST_CASE("the mutant tables: ids > 0, unique names, reasons for every uncatchable one") {
  for (BackendKind backend : {BackendKind::kGpu, BackendKind::kHost}) {
    SessionConfig config;
    config.backend = backend;
    const auto all = mutants_for(config);
    CHECK_FALSE(all.empty());
    for (size_t i = 0; i < all.size(); ++i) {
      CHECK(all[i].id > 0);
      CHECK_FALSE(all[i].kind.empty());
      CHECK(all[i].catchable_on_shared_gpu == all[i].uncatchable_reason.empty());
      for (size_t k = 0; k < i; ++k) CHECK(all[k].name != all[i].name);
    }
  }
  // The issue asks for at least 12 GPU mutants; the host model's are all catchable.
  SessionConfig gpu, host;
  host.backend = BackendKind::kHost;
  CHECK(mutants_for(gpu).size() >= 12);
  for (const auto& m : mutants_for(host)) CHECK(m.catchable_on_shared_gpu);
  EnvironmentInfo shared;
  shared.ranks_share_gpu = true;
  EnvironmentInfo distinct;
  MutantInfo ordering = mutant(5, "relaxed", false);
  CHECK_FALSE(mutant_catchable_here(ordering, shared));
  CHECK(mutant_catchable_here(ordering, distinct));
  CHECK(mutant_catchable_here(mutant(1, "x"), shared));

  // Concurrency: a shared GPU exposes it only under MPS (ours or the user's).
  MutantInfo early = mutant(1, "signal-before-payload");
  early.needs_concurrent_ranks = true;
  shared.mps_mode = "auto: off (no MPS daemon reachable; ranks sharing a GPU time-slice)";
  CHECK(why_not_catchable_here(early, shared).find("--mps on") != std::string::npos);
  shared.mps_mode = "on: private daemon (25% of SMs per rank)";
  CHECK(mutant_catchable_here(early, shared));
  shared.mps_mode = "auto: user daemon at /tmp/nvidia-mps (50% of SMs per rank)";
  CHECK(mutant_catchable_here(early, shared));
  CHECK(mutant_catchable_here(early, distinct));
  // Group size: world 2 has only 2 sources.
  MutantInfo three = mutant(2, "unnormalised");
  three.min_sources = 3;
  distinct.rank_gpu = {0, 1};
  CHECK(why_not_catchable_here(three, distinct).find("--world 3 or more") != std::string::npos);
  distinct.rank_gpu = {0, 1, 2, 3};
  CHECK(mutant_catchable_here(three, distinct));
  // The built-in kernel's table declares both.
  SessionConfig builtin;
  bool sanitizer_only = false;
  for (const MutantInfo& m : mutants_for(builtin)) {
    if (m.name == "signal-before-payload") CHECK(m.needs_concurrent_ranks);
    if (m.name == "unnormalised-with-neg-inf") CHECK(m.min_sources == 3);
    if (m.name == "read-far-past-input") {
      // selftest runs no sanitizer: the tool that catches it is named.
      sanitizer_only = true;
      CHECK(m.needs_tool == "--sanitize memcheck");
      CHECK(why_not_catchable_here(m, distinct).find("caught by --sanitize memcheck only") !=
            std::string::npos);
    } else {
      CHECK(m.needs_tool.empty());
    }
  }
  CHECK(sanitizer_only);
  // Each family a mutant names is a real one (cases/families.h), on both tables.
  SessionConfig host_model;
  host_model.backend = BackendKind::kHost;
  int with_family = 0;
  for (const SessionConfig& config : {builtin, host_model}) {
    for (const MutantInfo& m : mutants_for(config)) {
      if (m.family.empty()) continue;
      ++with_family;
      const auto& all = case_families();
      CHECK_MESSAGE(std::any_of(all.begin(), all.end(),
                                [&](const CaseFamily& f) { return f.name == m.family; }),
                    m.name);
    }
  }
  CHECK(with_family >= 7);  // GPU: guards, 2^31, capacity, LSE; host: 2^31, capacity, LSE
}

TEST_CASE("unjoined-side-stream: one mutant on both tables, caught by the input-reuse family only") {
  SessionConfig gpu, host;
  host.backend = BackendKind::kHost;
  for (const SessionConfig& config : {gpu, host}) {
    const auto all = mutants_for(config);
    const auto m = std::find_if(all.begin(), all.end(),
                                [](const MutantInfo& x) { return x.name == "unjoined-side-stream"; });
    REQUIRE(m != all.end());
    CHECK(m->family == "input-reuse");
    CHECK(m->kind == "protocol");
    CHECK(m->catchable_on_shared_gpu);
    CHECK(m->suite.empty());  // its cases are in default and full
  }
  const auto& families = case_families();
  const auto f = std::find_if(families.begin(), families.end(),
                              [](const CaseFamily& x) { return x.name == "input-reuse"; });
  REQUIRE(f != families.end());
  Case c;
  CHECK_FALSE(f->member(c));
  c.reuse = true;
  CHECK(f->member(c));
}

TEST_CASE("an interrupt stops the selftest: partial table, exit 128 + signal") {
  Harness h;
  // The interrupt arrives during mutant 2's first case: the error it causes
  // there (workers share the terminal's process group) is not a detection.
  h.behavior = [](int m, bool, int) {
    if (m == 2) {
      return FakeOutcome{CaseStatus::kError, "rank 0 killed by signal 2 | -",
                         FailureKind::kInterrupted};
    }
    return m == 0 ? pass() : fail();
  };
  auto plan = make_plan(3, 0, {mutant(1, "a"), mutant(2, "b"), mutant(3, "c")});
  plan.interrupted = [&h] {
    return std::find(h.log.begin(), h.log.end(), "m2 case0") != h.log.end() ? 2 : 0;
  };
  auto report = run_selftest(plan, h.factory());
  CHECK(report.interrupted_by == 2);
  REQUIRE(report.mutants.size() == 1);  // only complete outcomes
  CHECK(report.mutants[0].mutant.name == "a");
  CHECK(report.exit_code() == 130);
  CHECK(h.sessions == std::vector<std::string>{"m0", "m1", "m2"});  // mutant 3 never started
  const std::string table = format_selftest_table(report, "x");
  CHECK(selftest_verdict(report).find("interrupted by signal 2: only the mutants above ran, 1 of 1") !=
        std::string::npos);
  CHECK(table.find("PASSED") == std::string::npos);
}

TEST_CASE("the JSON report carries verdicts and the exit code") {
  Harness h;
  h.behavior = [](int m, bool, int) { return m == 1 ? fail() : pass(); };
  auto report = run_selftest(make_plan(2, 1, {mutant(1, "a"), mutant(2, "b")}), h.factory());
  nlohmann::json j = report;
  CHECK(j["exit_code"] == 1);
  CHECK(j["mutants"][0]["verdict"] == "detected");
  CHECK(j["mutants"][1]["verdict"] == "SURVIVED");
  CHECK(j["mutants"][0]["strict"]["first_case"] == "case0");
  CHECK(j["mutants"][0]["upstream"]["detected"] == true);
}

TEST_CASE("selftest: a plugin mutant names its case family by a [family] prefix") {
  CHECK(declared_family("[memory-stress] flags stored relaxed") == "memory-stress");
  CHECK(declared_family("[sm-pressure] every block spins") == "sm-pressure");
  CHECK(declared_family("[no-such-family] x").empty());
  CHECK(declared_family("flags stored relaxed [memory-stress]").empty());
  CHECK(declared_family("[memory-stress").empty());
  CHECK(family_suite("memory-stress") == "memstress");
  CHECK(family_suite("sm-pressure") == "pressure");
  CHECK(family_suite("guard-zones").empty());
}

TEST_CASE("selftest: the memory-ordering mutants are caught by the memory-stress family") {
  for (const char* name : {"relaxed-ordering", "no-arrival-fence", "relaxed-spinning-combine"}) {
    const GpuMutantInfo* m = find_gpu_mutant(std::string_view(name));
    REQUIRE(m != nullptr);
    CHECK(m->kind == "memory-ordering");
    CHECK(m->family == "memory-stress");
    CHECK(m->suite == "memstress");
    CHECK(m->needs_concurrent_ranks);
  }
}

}  // namespace dcp
