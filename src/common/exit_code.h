// The one function that maps what a command found to its exit code, for
// every command: run, replay, stress, shrink, selftest, bench (and main, for
// an exception that ends a command). SPEC section 2:
//   0 pass; 1 the kernel failed (is_kernel_failure); 2 usage or environment,
//   or nothing was tested; 3 the harness failed; 128 + signal interrupted.
// Precedence when several apply: interrupted, then 1, then 3, then 2.
//
// A killed worker: a worker that dies (signal, exit status, closed socket)
// while its status-board page carries the "inside the kernel" mark is the
// kernel's crash (kCrash, exit 1; a detection in selftest); one that dies
// anywhere else is kWorkerDied, a harness failure (exit 3) in every command,
// selftest included (there it is not a detection: it proves nothing about
// the mutant). The supervisor's diagnosis decides, once, in find_failure.
#pragma once

#include <vector>

#include "failure.h"
#include "results.h"

namespace dcp {

struct Findings {
  // Results that must pass: one kind per case (or bench point, scenario, or
  // the exception that ended the command); kNone for a pass.
  std::vector<FailureKind> must_pass;
  // selftest only: one per mutant that must be caught, the kind that caught
  // it, kNone when it survived (exit 1). A harness kind here is exit 3.
  std::vector<FailureKind> must_fail;
  bool nothing_tested = false;  // cases were selected and every one was skipped
  int interrupted_by = 0;       // SIGINT/SIGTERM received, or 0
};

int exit_code(const Findings& f);

// The findings of a run of cases (run, replay, stress, shrink, bench): each
// case's kind (kHarness for a kFail/kError case whose kind is kNone);
// nothing_tested when every case was skipped.
Findings findings_of(const std::vector<CaseResult>& cases, int interrupted_by);
// The findings of a command ended by an exception.
Findings findings_of(const std::exception& e);

}  // namespace dcp
