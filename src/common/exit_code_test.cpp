// The exit-code table: every failure kind through every command's own path to
// exit_code() (run, replay, stress, shrink: their case results; bench: its
// points' checks; selftest: a fake session under run_selftest), plus the
// exception path main and the commands' catch blocks use.
#include "exit_code.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <csignal>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include "bench.h"
#include "errors.h"
#include "selftest.h"

namespace dcp {
namespace {

constexpr FailureKind kAllKinds[] = {FailureKind::kSanitizer,
                                     FailureKind::kTrap,
                                     FailureKind::kCudaError,
                                     FailureKind::kKernelError,
                                     FailureKind::kCrash,
                                     FailureKind::kOutOfBounds,
                                     FailureKind::kNondeterministic,
                                     FailureKind::kHang,
                                     FailureKind::kMismatch,
                                     FailureKind::kNan,
                                     FailureKind::kWorkerDied,
                                     FailureKind::kHarness,
                                     FailureKind::kUsage,
                                     FailureKind::kInterrupted,
                                     FailureKind::kNone};

// The signal a kind arrives with: an interrupted case only happens under one.
int signal_for(FailureKind k) { return k == FailureKind::kInterrupted ? SIGINT : 0; }

CaseResult case_of(FailureKind k) {
  CaseResult r;
  r.case_id = "case";
  r.failure = k;
  r.status = k == FailureKind::kNone                                 ? CaseStatus::kPass
             : k == FailureKind::kMismatch || k == FailureKind::kNan ? CaseStatus::kFail
                                                                     : CaseStatus::kError;
  RankCaseResult rank;
  rank.failure = k;
  r.ranks.push_back(rank);
  return r;
}

// run and replay: every case result; stress: only the failing scenarios;
// shrink: the first run of the case.
int run_code(FailureKind k) { return exit_code(findings_of({case_of(k)}, signal_for(k))); }
int stress_code(FailureKind k) {
  std::vector<CaseResult> failures;
  if (k != FailureKind::kNone) failures.push_back(case_of(k));
  return exit_code(findings_of(failures, signal_for(k)));
}
int bench_code(FailureKind k) {
  BenchResult r;
  BenchPoint p;
  p.check = case_of(k);
  r.points.push_back(p);
  Findings f = bench_findings(r);
  f.interrupted_by = signal_for(k);
  return exit_code(f);
}

// selftest: one case; the variant named by `failing` (0: correct kernel, 1:
// the mutant) returns a case of kind `k`, the other variant behaves as it
// should (the correct one passes, the mutant fails with a mismatch).
class OneCaseSession : public SelftestSession {
 public:
  OneCaseSession(bool fails_with_k, bool is_mutant, FailureKind k)
      : fails_(fails_with_k), mutant_(is_mutant), k_(k) {
    env_.backend = "host";
  }
  CaseResult run_case(const Case&, const std::string&) override {
    if (fails_) return case_of(k_);
    return case_of(mutant_ ? FailureKind::kMismatch : FailureKind::kNone);
  }
  bool dead() const override { return false; }
  const EnvironmentInfo& environment() const override { return env_; }

 private:
  bool fails_, mutant_;
  FailureKind k_;
  EnvironmentInfo env_;
};

int selftest_code(int failing, FailureKind k) {
  SelftestPlan plan;
  plan.cases.resize(1);
  MutantInfo m;
  m.id = 1;
  m.name = "m";
  plan.mutants = {m};
  bool ran = false;
  plan.interrupted = [&] { return ran && k == FailureKind::kInterrupted ? SIGINT : 0; };
  SessionFactory factory = [&](int mutant, const CheckProfile&, const Geometry&) {
    ran = ran || mutant == failing;
    return std::make_unique<OneCaseSession>(mutant == failing, mutant != 0, k);
  };
  return run_selftest(plan, factory).exit_code();
}

struct Row {
  FailureKind kind;
  int must_pass;  // run, replay, stress, shrink, bench, selftest's correct kernel
  int mutant;     // selftest: the mutant's run fails with this kind
};

// 0 pass, 1 kernel failure, 2 usage, 3 harness, 130 SIGINT.
constexpr Row kTable[] = {
    {FailureKind::kSanitizer, 1, 0},
    {FailureKind::kTrap, 1, 0},
    {FailureKind::kCudaError, 1, 0},
    {FailureKind::kKernelError, 1, 0},
    {FailureKind::kCrash, 1, 0},
    {FailureKind::kOutOfBounds, 1, 0},
    {FailureKind::kNondeterministic, 1, 0},
    {FailureKind::kHang, 1, 0},
    {FailureKind::kMismatch, 1, 0},
    {FailureKind::kNan, 1, 0},
    {FailureKind::kWorkerDied, 3, 3},
    {FailureKind::kHarness, 3, 3},
    {FailureKind::kUsage, 2, 2},
    {FailureKind::kInterrupted, 130, 130},
    {FailureKind::kNone, 0, 1},  // a mutant that passes survived
};

}  // namespace

TEST_CASE("the table covers every failure kind") {
  CHECK(std::size(kTable) == std::size(kAllKinds));
  for (size_t i = 0; i < std::size(kTable); ++i) CHECK(kTable[i].kind == kAllKinds[i]);
}

TEST_CASE("every failure kind gives the same exit code in every command") {
  for (const Row& row : kTable) {
    const std::string name(to_string(row.kind));
    CAPTURE(name);
    const std::map<std::string, int> got = {
        {"run", run_code(row.kind)},       {"replay", run_code(row.kind)},
        {"stress", stress_code(row.kind)}, {"shrink", run_code(row.kind)},
        {"bench", bench_code(row.kind)},   {"selftest-correct", selftest_code(0, row.kind)},
    };
    for (const auto& [command, code] : got) {
      CAPTURE(command);
      CHECK(code == row.must_pass);
    }
    CHECK(selftest_code(1, row.kind) == row.mutant);
  }
}

TEST_CASE("an exception that ends a command maps through its kind") {
  CHECK(exit_code(findings_of(UsageError("bad flag"))) == 2);
  CHECK(exit_code(findings_of(HarnessError("socket"))) == 3);
  CHECK(exit_code(findings_of(std::runtime_error("bug"))) == 3);
  for (FailureKind k : kAllKinds) {
    const KernelFault fault("fault", k);
    const std::string name(to_string(k));
    CAPTURE(name);
    CHECK(is_kernel_failure(fault.kind));  // a non-kernel kind becomes kKernelError
    CHECK(exit_code(findings_of(fault)) == 1);
  }
}

namespace {

Findings findings(std::vector<FailureKind> must_pass, std::vector<FailureKind> must_fail = {},
                  bool nothing_tested = false, int interrupted_by = 0) {
  Findings f;
  f.must_pass = std::move(must_pass);
  f.must_fail = std::move(must_fail);
  f.nothing_tested = nothing_tested;
  f.interrupted_by = interrupted_by;
  return f;
}

}  // namespace

TEST_CASE("precedence: interrupted, then kernel, then harness, then usage") {
  using K = FailureKind;
  CHECK(exit_code(Findings{}) == 0);
  CHECK(exit_code(findings({K::kHarness, K::kMismatch})) == 1);
  CHECK(exit_code(findings({K::kUsage, K::kWorkerDied})) == 3);
  CHECK(exit_code(findings({K::kHang}, {}, false, SIGTERM)) == 143);
  CHECK(exit_code(findings({K::kNone}, {}, true)) == 2);
  CHECK(exit_code(findings({K::kHarness}, {}, true)) == 3);
  CHECK(exit_code(findings({K::kNone}, {K::kTrap, K::kNone})) == 1);
  CHECK(exit_code(findings({K::kNone}, {K::kTrap, K::kHarness})) == 3);
}

TEST_CASE("run: every case skipped is nothing tested (2); an untyped failure is the harness's") {
  CaseResult skipped;
  skipped.status = CaseStatus::kSkipped;
  CHECK(exit_code(findings_of({skipped, skipped}, 0)) == 2);
  CHECK(exit_code(findings_of({skipped, case_of(FailureKind::kNone)}, 0)) == 0);
  CHECK(exit_code(findings_of({}, 0)) == 0);
  CaseResult untyped;
  untyped.status = CaseStatus::kError;
  CHECK(exit_code(findings_of({untyped}, 0)) == 3);
}

TEST_CASE("failure kinds round-trip by name; the headline is the earliest kind") {
  for (FailureKind k : kAllKinds) {
    CHECK(failure_kind_from_string(to_string(k)) == k);
  }
  CHECK_FALSE(failure_kind_from_string("kernel").has_value());
  CHECK(headline(FailureKind::kHang, FailureKind::kTrap) == FailureKind::kTrap);
  CHECK(headline(FailureKind::kHarness, FailureKind::kHang) == FailureKind::kHang);
  CHECK(headline(FailureKind::kNone, FailureKind::kWorkerDied) == FailureKind::kWorkerDied);
  CHECK(error_class(FailureKind::kMismatch).empty());
  CHECK(error_class(FailureKind::kCrash) == "kernel");
  CHECK(error_class(FailureKind::kWorkerDied) == "harness");
}

}  // namespace dcp
