// The human report on stdout, for every command: a header, live progress (a
// rewritten line on a TTY, occasional plain lines otherwise), and a final
// summary meant to be read in five seconds: failures grouped by axis value,
// first mismatches, replay lines, and last the verdict line. Verbosity (-q,
// -v), colour (only on a TTY, never with NO_COLOR) and flushing are decided
// here alone: commands print through these methods, never to stdout directly.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "case.h"
#include "run_report.h"

namespace dcp {

struct TerminalStyle {
  bool tty = false;    // stdout is a terminal: progress line rewritten in place
  bool color = false;  // ANSI colour
  int verbosity = 0;   // -1 quiet, 0 normal, 1 verbose
};
// tty from isatty(stdout); colour only on a tty, without NO_COLOR, TERM != dumb.
TerminalStyle detect_terminal_style(int verbosity);

// Axis name/value pairs of a case, as shown in "failures by axis value" (the
// axis table's labels, cases/axes.h).
std::vector<std::pair<std::string, std::string>> case_axes(const Case& c);
// "mode=graph: 4 failed / 20" lines for axis values with failures, most
// telling first (highest failing fraction), from each result's scenario;
// results without one (an unparsable id) are ignored.
std::vector<std::string> failures_by_axis(const std::vector<CaseResult>& cases,
                                          size_t max_lines = 12);
std::string format_mismatch(const Mismatch& m);
std::string format_duration(double ms);

class TerminalReporter {
 public:
  TerminalReporter(std::FILE* out, TerminalStyle style);
  void begin(const std::string& header_line, int num_cases);
  void case_started(int index, const std::string& case_id);
  void case_finished(int index, const CaseResult& r);
  // run and replay: details, failures, skip reason, then verdict() with the counts.
  void summary(const RunReport& report);

  // Lines that survive the progress line: note always, info unless -q,
  // detail only with -v; block is pre-formatted text (a table), always.
  void note(const std::string& line);
  void info(const std::string& line);
  void detail(const std::string& line);
  void block(const std::string& text);
  // A live status line: on a TTY rewritten in place, at most every
  // kTtyStatusEvery unless `now`; off a TTY a plain line at most every
  // kPlainStatusEvery; never with -q.
  void status(const std::string& line, bool now = false);
  // A failure as it is found: "FAIL <label> (<kind>): <message>" (ERROR for
  // an error), its first rank errors and mismatches, and its replay line.
  void failure(const std::string& label, const CaseResult& r);
  // The last line of every command: "<VERDICT>: <detail>", the verdict word
  // of the exit code (run_report.h), in colour on a TTY.
  void verdict(int exit_code, const std::string& detail);
  int verbosity() const { return style_.verbosity; }

 private:
  std::string paint(const std::string& text, const char* ansi) const;
  std::string status_word(CaseStatus s) const;
  void clear_progress();
  void show_progress(const std::string& line);
  void print_failures(const RunReport& report) const;
  void print_details(const RunReport& report) const;

  std::FILE* out_;
  TerminalStyle style_;
  int num_cases_ = 0;
  int num_done_ = 0;
  int num_bad_ = 0;
  int next_plain_progress_ = 0;
  bool progress_shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_plain_progress_ = start_;
  std::chrono::steady_clock::time_point last_status_ = start_;
};

}  // namespace dcp
