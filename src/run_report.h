// What every reporter (terminal, JSON, JUnit) is given about one command's run,
// and the single place that turns case results into counts, failure types and
// the exit code, so the three reports can never disagree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "phase_summary.h"
#include "results.h"
#include "session.h"

namespace dcp {

struct Counts {
  int total = 0;
  int passed = 0;
  int failed = 0;   // CaseStatus::kFail: the checker found mismatches or NaNs
  int errors = 0;   // CaseStatus::kError: hang, trap, crash, harness error
  int skipped = 0;
};

struct RepeatSummary {  // replay --repeat K
  int runs = 0;
  int failed_runs = 0;
  bool hashes_identical = true;
};

struct RunReport {
  std::string command;                  // "run", "replay", ...
  std::vector<std::string> argv;        // as typed
  SessionConfig config;
  std::string suite;                    // "" for replay
  std::string filter;
  uint64_t seed = 0;
  std::optional<EnvironmentInfo> environment;  // absent if no session started
  std::vector<CaseResult> cases;        // in run order, skipped ones included
  PhaseTotals phases;                   // over every case that ran (stress: not only those kept)
  std::optional<RepeatSummary> repeat;
  std::string started_at;               // ISO 8601 UTC
  double wall_s = 0;
  int interrupted_by = 0;               // signal number, 0 if none
  int exit_code = 0;
};

Counts count_results(const std::vector<CaseResult>& cases);
// A kError is a kernel failure when any rank says so; otherwise the harness failed.
bool is_kernel_error(const CaseResult& r);
// "mismatch", "nan", "hang", "trap", "crash", "kernel-error", "harness", "" (pass/skip).
std::string failure_type(const CaseResult& r);
// SPEC section 2: 1 if the kernel failed anything, else 3 if the harness did,
// else 0; an interrupted run exits 128 + signal.
int exit_code_for(const std::vector<CaseResult>& cases, int interrupted_by);
// "PASS", "FAIL", "HARNESS ERROR", "INTERRUPTED".
std::string verdict_word(int exit_code);
std::string iso8601_now();

}  // namespace dcp
