// `dcp-check run` (also the default command): build the suite, start one
// Session, run every case, report. Exit code from the results (run_report.h).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "cli_common.h"
#include "errors.h"
#include "options.h"
#include "replay.h"
#include "report_terminal.h"
#include "session.h"

namespace dcp {
namespace {

const char* signal_name(int signo) { return signo == SIGINT ? "SIGINT" : "SIGTERM"; }

class RunCommand {
 public:
  RunCommand(const ValidRun& v, const std::vector<std::string>& argv)
      : v_(v),
        cases_(select_cases(v.config.world, v.config.geometry, v.selection)),
        term_(stdout, detect_terminal_style(v.report.verbosity())),
        report_(make_run_report("run", argv, v.config)) {
    report_.suite = v.selection.suite;
    report_.filter = v.selection.filter;
    report_.seed = v.selection.seed;
  }

  int execute() {
    const Geometry& g = v_.config.geometry;
    term_.begin(fmt::format("dcp-check: suite {}{}, {} cases, world {} ({}), geometry {}, "
                            "backend {}",
                            v_.selection.suite,
                            v_.selection.filter.empty() ? "" : " --filter " + v_.selection.filter,
                            cases_.size(), v_.config.world, describe_groups(v_.config.world),
                            g.name.empty() ? "custom" : g.name,
                            v_.config.backend == BackendKind::kHost ? "host" : "gpu"),
                static_cast<int>(cases_.size()));
    try {
      auto session = std::make_unique<Session>(v_.config);
      report_.environment = session->environment();
      run_cases(*session);
      ran_ = true;
      const auto teardown = std::chrono::steady_clock::now();
      report_.environment->teardown = session->shut_down();  // workers, workspaces, MPS
      session.reset();
      report_.environment->teardown_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - teardown).count();
    } catch (const std::exception& e) {
      finish_after_exception(exit_code(findings_of(e)), failure_kind_of(e) == FailureKind::kUsage
                                                            ? "the session could not start"
                                                            : "the session failed");
      throw;
    }
    report_.exit_code = exit_code(findings_of(report_.cases, interrupts_.signal_received()));
    finish();
    return report_.exit_code;
  }

 private:
  std::string replay_for(const Case& c) const {
    return replay_command(v_.config, v_.config.world, c);
  }

  void run_cases(Session& session) {
    for (size_t i = 0; i < cases_.size(); ++i) {
      const Case& c = cases_[i];
      if (const int sig = interrupts_.signal_received()) {
        skip_rest(i, fmt::format("not run: interrupted by {}", signal_name(sig)));
        return;
      }
      if (session.dead()) {
        skip_rest(i, session_ended_reason());
        return;
      }
      term_.case_started(static_cast<int>(i), format_case_id(c));
      CaseResult r;
      bool aborted = false;
      try {
        r = session.run_case(c, v_.selection.suite);
      } catch (const KernelFault& e) {
        r = error_result(c, v_.selection.suite, e, replay_for(c));
        aborted = true;
      } catch (const HarnessError& e) {
        r = error_result(c, v_.selection.suite, e, replay_for(c));
        aborted = true;
      }
      record(i, std::move(r));
      if (aborted) {
        skip_rest(i + 1, session_ended_reason());
        return;
      }
    }
  }

  void record(size_t i, CaseResult r) {
    const Case& c = cases_[i];
    if (r.case_id.empty()) r.case_id = format_case_id(c);
    if (!r.scenario) r.scenario = c;
    if (r.suite.empty()) r.suite = v_.selection.suite;
    if (r.replay.empty()) r.replay = replay_for(c);
    // Workers share our terminal's process group, so Ctrl-C kills them too: a
    // case that errored while we were being interrupted did not fail.
    if (const int sig = interrupts_.signal_received(); sig && r.status == CaseStatus::kError) {
      r.status = CaseStatus::kSkipped;
      r.failure = FailureKind::kInterrupted;
      if (r.message.find("interrupted") == std::string::npos) {
        r.message = fmt::format("interrupted by {} while running ({})", signal_name(sig), r.message);
      }
    }
    if (r.status == CaseStatus::kError) last_error_ = r.case_id;  // its message is in its own result
    term_.case_finished(static_cast<int>(i), r);
    report_.phases.add(r);
    report_.cases.push_back(std::move(r));
  }

  std::string session_ended_reason() const {
    return last_error_.empty() ? "not run: the session ended"
                               : "not run: the session ended at case " + last_error_;
  }

  void skip_rest(size_t from, const std::string& reason) {
    for (size_t i = from; i < cases_.size(); ++i) {
      report_.cases.push_back(
          skipped_result(cases_[i], v_.selection.suite, reason, replay_for(cases_[i])));
    }
  }

  // An exception ends the run: mark what did not run, write what we have, and
  // let the exception reach main (which prints it and maps the exit code).
  void finish_after_exception(int exit_code, const std::string& why) {
    skip_rest(report_.cases.size(), "not run: " + why);
    report_.exit_code = exit_code;
    try {
      finish();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "dcp-check: warning: %s\n", e.what());
    }
  }

  void finish() {
    report_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    report_.interrupted_by = interrupts_.signal_received();
    // Summary first: if a report cannot be written, main's error line (exit 3)
    // comes last, right under the verdict it overrides.
    const Counts counts = count_results(report_.cases);
    const bool all_skipped = ran_ && counts.total > 0 && counts.skipped == counts.total;
    if (report_.exit_code != kExitUsage || all_skipped) term_.summary(report_);
    write_reports(v_.report, report_);
    if (all_skipped && report_.exit_code == kExitUsage) {
      fmt::print(stderr, "dcp-check: error: every selected case was skipped: nothing was tested\n");
    }
  }

  const ValidRun& v_;
  std::vector<Case> cases_;
  TerminalReporter term_;
  RunReport report_;
  InterruptGuard interrupts_;
  std::string last_error_;
  bool ran_ = false;  // the session started and every case was offered to it
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

int run_command(const RunOptions& opts, const std::vector<std::string>& argv) {
  const ValidRun v = validate_run_options(opts);
  RunCommand command(v, argv);
  return command.execute();
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run", "Run a suite on every rank and check every element (the default command)");
  add_world_option(sub, opts->world);
  add_geometry_options(sub, opts->geometry);
  add_selection_options(sub, opts->selection);
  add_session_options(sub, opts->session);
  add_report_options(sub, opts->report);
  sub->callback([opts, &ctx] {
    ctx.action = [opts, &ctx] { return run_command(*opts, ctx.argv); };
  });
  return sub;
}

}  // namespace dcp
