// Helpers shared by the commands that run cases (run, replay, stress, shrink,
// selftest): case selection, interrupt handling, results for cases that did
// not run or whose run threw.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "case.h"
#include "exit_code.h"
#include "options.h"
#include "run_report.h"
#include "run_target.h"

namespace dcp {

// The suite's options for this world/geometry, generated for `target`.
SuiteOptions suite_options(int world, const Geometry& geometry, const CaseSelection& sel,
                           const RunTarget& target);
// The suite's cases for this world/geometry, generated for `target` (the
// default: the built-in kernel, one GPU per rank), that match the filter.
// Throws UsageError when the filter selects nothing (a run that tests nothing
// must not pass).
std::vector<Case> select_cases(int world, const Geometry& geometry, const CaseSelection& sel,
                               const RunTarget& target = {});

// "dcp4 x1, dcp2 x2": the DCP groups that run concurrently for each size.
std::string describe_groups(int world);
// The header line of a --sanitize run: the tool, and what it turns off or stretches.
std::string sanitize_note(const SessionConfig& config);

// Turns SIGINT/SIGTERM into a flag the command loop polls, so an interrupted
// run stops between cases, tears the session down through RAII and still
// writes its partial reports. A second signal restores the default action and
// re-raises it (the user insists). A handler can only reach static storage,
// hence one process-wide atomic; the guard restores the previous handlers.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  int signal_received() const;  // 0, or the first signal caught

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

// "SIGINT" or "SIGTERM".
const char* signal_name(int signo);

RunReport make_run_report(std::string command, const std::vector<std::string>& argv,
                          const SessionConfig& config);

// A result for a case that did not run (session dead, interrupted, aborted).
CaseResult skipped_result(const Case& c, const std::string& suite, const std::string& reason,
                          const std::string& replay);
// A result for a case whose run_case threw `e` instead of returning: its
// message, and its kind (failure_kind_of) on a supervisor rank (-1).
CaseResult error_result(const Case& c, const std::string& suite, const std::exception& e,
                        const std::string& replay);
// run(): one case on a live session. A KernelFault or HarnessError it throws
// (the session is broken) becomes the case's error_result and sets `threw`.
CaseResult result_or_error(const Case& c, const std::string& suite, const std::string& replay,
                           const std::function<CaseResult()>& run, bool& threw);

}  // namespace dcp
