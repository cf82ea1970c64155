// One command's lifecycle, written once for run, replay, stress, shrink,
// selftest and bench (docs/DESIGN.md, "One command's lifecycle"):
//   start: the clock, the Ctrl-C guard, the terminal reporter;
//   body.run: the work;
//   finish: the exit code (body.exit_code), wall time and signal go into the
//     report (body.record), the summary is printed (verdict last), then every
//     report file is written, each atomically. A file that cannot be written
//     throws HarnessError (exit 3) after the summary, so main's error line is
//     the last line.
// When body.run throws: body.abandon marks what did not run, the partial
// reports are recorded and written (a failure to write them is a warning),
// the summary is printed unless the error is bad usage (main's one line says
// it all), and the exception goes on to main, which prints it and maps it to
// the exit code.
#pragma once

#include <chrono>
#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

#include "cli_common.h"
#include "report_file.h"
#include "report_terminal.h"

namespace dcp {

struct Outcome {
  int exit_code = 0;
  double wall_s = 0;
  int interrupted_by = 0;  // the first SIGINT/SIGTERM, or 0
  bool aborted = false;    // body.run threw: main prints the error
};

class CommandLifecycle;

// What differs between commands. The lifecycle calls run, then exit_code (or
// abandon, when run threw), record, summary and report_files, in that order.
class CommandBody {
 public:
  virtual ~CommandBody() = default;
  // The work: header, sessions, cases, printed through life.term().
  virtual void run(CommandLifecycle& life) = 0;
  // The exit code of a run that returned (exit_code.h), given the signal.
  virtual int exit_code(int interrupted_by) const = 0;
  // run threw `e`: mark in the report what did not run.
  virtual void abandon(const std::exception& e) { (void)e; }
  // Stamp the outcome into the report.
  virtual void record(const Outcome& o) = 0;
  // Everything after the work, down to term.verdict() as the last line.
  virtual void summary(TerminalReporter& term, const Outcome& o) const = 0;
  // The report files asked for, from the recorded report.
  virtual std::vector<ReportFile> report_files() const { return {}; }
};

class CommandLifecycle {
 public:
  explicit CommandLifecycle(int verbosity);  // stdout, style detected
  CommandLifecycle(std::FILE* out, TerminalStyle style);
  CommandLifecycle(const CommandLifecycle&) = delete;
  CommandLifecycle& operator=(const CommandLifecycle&) = delete;

  // Runs the body through the whole lifecycle and returns its exit code, or
  // rethrows what the body threw once the partial reports are out.
  int execute(CommandBody& body);

  TerminalReporter& term() { return term_; }
  int interrupted() const { return interrupts_.signal_received(); }
  double elapsed_s() const;

 private:
  Outcome outcome(int exit_code, bool aborted) const;
  void finish(CommandBody& body, const Outcome& o);

  TerminalReporter term_;
  InterruptGuard interrupts_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Every command's action: its body built from `args` (after validation, so
// bad usage fails before the lifecycle starts), run through one lifecycle.
template <typename Body, typename... Args>
int execute_command(int verbosity, Args&&... args) {
  Body body(std::forward<Args>(args)...);
  CommandLifecycle life(verbosity);
  return life.execute(body);
}

}  // namespace dcp
