// Shrinking a failing case: greedy descent over shrink candidates (simpler
// variants of a case, ordered most-reducing first). The first candidate that
// still fails *the same way* (a mismatch stays a mismatch, a hang/crash stays
// an error) replaces the case, and the search restarts from it; the search
// stops at a fixpoint (no candidate fails) or when the attempt or time budget
// is spent. The runner is a plain callable, so the shrinker is tested without
// processes; the CLI's runner owns sessions and restarts dead ones.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "case.h"
#include "results.h"

namespace dcp {

using CaseRunner = std::function<CaseResult(const Case&)>;
using CandidateGenerator = std::function<std::vector<Case>(const Case&)>;

struct ShrinkLimits {
  int max_attempts = 200;    // candidates actually run (cached passes are free)
  double max_seconds = 600;  // wall clock for the whole shrink
  // Polled before every attempt (e.g. a SIGINT flag): true stops the shrink
  // with what it has. After Ctrl-C every candidate would only error out.
  std::function<bool()> cancelled;
};

struct ShrinkOutcome {
  Case minimal;                   // the smallest case found that still fails
  CaseResult minimal_result;      // its result (the original's when no step was taken)
  int num_steps = 0;              // accepted candidates
  int num_attempts = 0;           // candidates run
  bool reached_fixpoint = false;  // false: a budget ran out first
  std::string stop_reason;        // "fixpoint", "attempt budget (200)", "time budget (600 s)"
};

// A failure of the kernel: a check mismatch (kFail), or a kError that a rank
// attributes to the kernel (hang, trap, crash). Harness errors are not.
bool is_kernel_failure(const CaseResult& r);

// True when `candidate` reproduces the failure class of `original`: both kFail
// (check mismatch) or both kernel kError (hang, crash, trap). Passing, skipped
// and harness-error results never count, nor does an error for a mismatch (a
// shrink must not trade a wrong value for an unrelated hang).
bool same_failure(const CaseResult& original, const CaseResult& candidate);

// `failing_result` must be a kernel failure; throws std::invalid_argument
// otherwise.
ShrinkOutcome shrink_case(const Case& failing, const CaseResult& failing_result,
                          const CaseRunner& run, const CandidateGenerator& candidates,
                          const ShrinkLimits& limits = {});

}  // namespace dcp
