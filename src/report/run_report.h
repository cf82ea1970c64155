// What every reporter (terminal, JSON, JUnit) is given about one command's run,
// and the single place that turns case results into counts and failure types,
// so the three reports can never disagree (exit codes: exit_code.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coverage.h"
#include "phase_summary.h"
#include "results.h"
#include "session_config.h"

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

// `--shard K/N`: which part of the work this report holds (app/shard.h).
struct ReportShard {
  int index = 0;
  int count = 1;
  std::string source;      // "--shard" or the scheduler's variables
  int64_t suite_cases = 0;  // run: the cases of every shard together (before the split)
  std::string suite_sha256; // run: of those cases' ids, one per line: every shard split the same list
  uint64_t base_seed = 0;   // stress: the seed every shard's own seed derives from
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
  // `run`: the suite's pairwise coverage on the session's target (coverage.h).
  std::optional<Coverage> coverage;
  std::optional<ReportShard> shard;     // absent: the whole run, unsharded
  std::string started_at;               // ISO 8601 UTC
  double wall_s = 0;
  int interrupted_by = 0;               // signal number, 0 if none
  int exit_code = 0;
};

Counts count_results(const std::vector<CaseResult>& cases);
// --against: the two kernels' agreement summed over a case's ranks, or over
// every case of a run; nullopt when nothing was compared.
std::optional<Agreement> case_agreement(const CaseResult& r);
std::optional<Agreement> run_agreement(const std::vector<CaseResult>& cases);
// "agreement: kernel 'a' and --against 'b' within tolerance on 1,234 elements;
// 3 differ bitwise, max 1 ulp at rank 0 op 2 token 5 head 3 dim 17 (x vs y)",
// then the combined LSE's counts when it was compared. The terminal summary,
// JUnit failure text and docs/report-format.md share it.
std::string agreement_line(const Agreement& a, const SessionConfig& config);
// A kError whose kind is the kernel's (is_kernel_failure): JUnit's <failure>.
bool is_kernel_error(const CaseResult& r);
// The case's failure kind by name (failure.h), "" for pass and skip.
std::string failure_type(const CaseResult& r);
// "PASS", "FAIL", "HARNESS ERROR", "USAGE ERROR", "INTERRUPTED" for an exit code.
std::string verdict_word(int exit_code);
std::string iso8601_now();

}  // namespace dcp
