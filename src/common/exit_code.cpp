#include "exit_code.h"

#include <algorithm>
#include <csignal>

#include "errors.h"

namespace dcp {

int exit_code(const Findings& f) {
  const auto any = [](const std::vector<FailureKind>& ks, auto pred) {
    return std::any_of(ks.begin(), ks.end(), pred);
  };
  const auto kernel = [](FailureKind k) { return is_kernel_failure(k); };
  const auto is = [](FailureKind want) { return [want](FailureKind k) { return k == want; }; };
  const auto harness = [](FailureKind k) {
    return k == FailureKind::kHarness || k == FailureKind::kWorkerDied;
  };
  if (f.interrupted_by != 0) return 128 + f.interrupted_by;
  // A kind that says interrupted without the signal (not expected): SIGINT's code.
  if (any(f.must_pass, is(FailureKind::kInterrupted)) ||
      any(f.must_fail, is(FailureKind::kInterrupted))) {
    return 128 + SIGINT;
  }
  if (any(f.must_pass, kernel) || any(f.must_fail, is(FailureKind::kNone))) {
    return kExitKernelFailure;
  }
  if (any(f.must_pass, harness) || any(f.must_fail, harness)) return kExitHarness;
  if (any(f.must_pass, is(FailureKind::kUsage)) || any(f.must_fail, is(FailureKind::kUsage)) ||
      f.nothing_tested) {
    return kExitUsage;
  }
  return kExitPass;
}

Findings findings_of(const std::vector<CaseResult>& cases, int interrupted_by) {
  Findings f;
  f.interrupted_by = interrupted_by;
  for (const CaseResult& r : cases) {
    // A failed case nobody typed is the harness's own bug.
    const bool failed = r.status == CaseStatus::kFail || r.status == CaseStatus::kError;
    f.must_pass.push_back(failed && r.failure == FailureKind::kNone ? FailureKind::kHarness
                                                                    : r.failure);
  }
  // A gate must not turn green on a kernel that skipped everything.
  f.nothing_tested = !cases.empty() && std::all_of(cases.begin(), cases.end(), [](const auto& r) {
    return r.status == CaseStatus::kSkipped;
  });
  return f;
}

Findings findings_of(const std::exception& e) {
  Findings f;
  f.must_pass.push_back(failure_kind_of(e));
  return f;
}

}  // namespace dcp
