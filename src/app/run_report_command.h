// The body of the commands whose report is a RunReport (run, replay, stress):
// the report, its --json and --junit files, the summary, and the loop over a
// planned list of cases (run, replay) that records each result and marks the
// rest skipped when the run stops early.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case.h"
#include "command_lifecycle.h"
#include "options.h"
#include "run_report.h"

namespace dcp {

class RunReportCommand : public CommandBody {
 public:
  RunReportCommand(std::string command, const std::vector<std::string>& argv,
                   const SessionConfig& config, const ReportOptions& opts);

  // Every planned case not yet recorded: skipped, "not run: <why>".
  void abandon(const std::exception& e) override;
  // From every recorded case (stress: its failures), exit_code.h.
  int exit_code(int interrupted_by) const override;
  void record(const Outcome& o) override;
  void summary(TerminalReporter& term, const Outcome& o) const override;
  std::vector<ReportFile> report_files() const override;

  const RunReport& report() const { return report_; }

 protected:
  // The --json document (stress adds its own section).
  virtual nlohmann::ordered_json json() const;
  // Why the rest did not run when run() threw `e` ("the session failed").
  virtual std::string abandon_reason(const std::exception& e) const;

  // Runs the planned cases in order: run_one(case) gives each result, which is
  // completed (id, suite, replay), shown and recorded. Before each case the
  // loop stops at a signal, or when session_ended() says no case can run
  // any more; the rest are then skipped with the reason.
  void run_cases(CommandLifecycle& life, const std::function<CaseResult(const Case&)>& run_one,
                 const std::function<bool()>& session_ended);
  std::string replay_for(const Case& c) const;
  // --sanitize: findings the sanitizer reported only at the workers'
  // teardown fail the last case that ran (never dropped), said on `term`.
  void add_late_sanitizer_findings(TerminalReporter& term,
                                   const std::vector<SanitizerFinding>& findings);

  RunReport report_;
  ReportOptions opts_;
  std::vector<Case> planned_;  // what run_cases runs; report_.cases follows it

 private:
  void record_case(TerminalReporter& term, size_t index, CaseResult r, int signal);
  void skip_rest(const std::string& reason);
  std::string session_ended_reason() const;

  std::string last_error_;  // the id of the last case that errored, or ""
};

}  // namespace dcp
