#include "run_report_command.h"

#include <fmt/format.h>

#include "errors.h"
#include "exit_code.h"
#include "replay.h"
#include "report_json.h"
#include "report_junit.h"

namespace dcp {

RunReportCommand::RunReportCommand(std::string command, const std::vector<std::string>& argv,
                                   const SessionConfig& config, const ReportOptions& opts)
    : report_(make_run_report(std::move(command), argv, config)), opts_(opts) {}

std::string RunReportCommand::replay_for(const Case& c) const {
  return replay_command(report_.config, report_.config.world, c);
}

std::string RunReportCommand::abandon_reason(const std::exception& e) const {
  return failure_kind_of(e) == FailureKind::kUsage ? "the session could not start"
                                                   : "the session failed";
}

void RunReportCommand::abandon(const std::exception& e) {
  skip_rest("not run: " + abandon_reason(e));
}

int RunReportCommand::exit_code(int interrupted_by) const {
  return dcp::exit_code(findings_of(report_.cases, interrupted_by));
}

void RunReportCommand::record(const Outcome& o) {
  report_.wall_s = o.wall_s;
  report_.interrupted_by = o.interrupted_by;
  report_.exit_code = o.exit_code;
}

void RunReportCommand::add_late_sanitizer_findings(TerminalReporter& term,
                                                   const std::vector<SanitizerFinding>& findings) {
  if (findings.empty()) return;
  CaseResult* last = nullptr;
  for (CaseResult& r : report_.cases) {
    if (r.status != CaseStatus::kSkipped) last = &r;
  }
  if (last == nullptr && !report_.cases.empty()) last = &report_.cases.back();
  if (last == nullptr) return;  // no case: the session failed to start and said so
  add_sanitizer_findings(*last, findings, "after the last case that ran, at the workers' teardown");
  term.info(
      fmt::format("compute-sanitizer reported {} error{} at the workers' teardown: case {} "
                  "fails ({})",
                  findings.size(), findings.size() == 1 ? "" : "s", last->case_id,
                  findings.front().describe()));
}

void RunReportCommand::summary(TerminalReporter& term, const Outcome& o) const {
  term.summary(report_);
  const Counts counts = count_results(report_.cases);
  if (!o.aborted && o.exit_code == kExitUsage && counts.total > 0 &&
      counts.skipped == counts.total) {
    fmt::print(stderr, "dcp-check: error: every selected case was skipped: nothing was tested\n");
  }
}

nlohmann::ordered_json RunReportCommand::json() const { return report_to_json(report_); }

std::vector<ReportFile> RunReportCommand::report_files() const {
  std::vector<ReportFile> files;
  if (!opts_.json_path.empty()) files.push_back({opts_.json_path, json().dump(2) + "\n"});
  if (!opts_.junit_path.empty()) files.push_back({opts_.junit_path, junit_xml(report_)});
  return files;
}

void RunReportCommand::run_cases(CommandLifecycle& life,
                                 const std::function<CaseResult(const Case&)>& run_one,
                                 const std::function<bool()>& session_ended) {
  for (size_t i = report_.cases.size(); i < planned_.size(); ++i) {
    if (const int sig = life.interrupted()) {
      skip_rest(fmt::format("not run: interrupted by {}", signal_name(sig)));
      return;
    }
    if (session_ended()) {
      skip_rest(session_ended_reason());
      return;
    }
    life.term().case_started(static_cast<int>(i), format_case_id(planned_[i]));
    CaseResult r = run_one(planned_[i]);
    record_case(life.term(), i, std::move(r), life.interrupted());
  }
}

void RunReportCommand::record_case(TerminalReporter& term, size_t index, CaseResult r,
                                   int signal) {
  const Case& c = planned_[index];
  if (r.case_id.empty()) r.case_id = format_case_id(c);
  if (!r.scenario) r.scenario = c;
  if (r.suite.empty()) r.suite = report_.suite;
  if (r.replay.empty()) r.replay = replay_for(c);
  // Workers share our terminal's process group, so Ctrl-C kills them too: a
  // case that errored while we were being interrupted did not fail.
  if (signal != 0 && r.status == CaseStatus::kError) {
    r.status = CaseStatus::kSkipped;
    r.failure = FailureKind::kInterrupted;
    if (r.message.find("interrupted") == std::string::npos) {
      r.message = fmt::format("interrupted by {} while running ({})", signal_name(signal), r.message);
    }
  }
  if (r.status == CaseStatus::kError) last_error_ = r.case_id;  // its message is in its own result
  term.case_finished(static_cast<int>(index), r);
  report_.phases.add(r);
  report_.cases.push_back(std::move(r));
}

std::string RunReportCommand::session_ended_reason() const {
  return last_error_.empty() ? "not run: the session ended"
                             : "not run: the session ended at case " + last_error_;
}

void RunReportCommand::skip_rest(const std::string& reason) {
  for (size_t i = report_.cases.size(); i < planned_.size(); ++i) {
    report_.cases.push_back(skipped_result(planned_[i], report_.suite, reason, replay_for(planned_[i])));
  }
}

}  // namespace dcp
