// Running every worker under NVIDIA's compute-sanitizer (--sanitize TOOL):
// the argv prefix that wraps a worker, and the parser that turns the
// sanitizer's log into SanitizerFindings. Why the options are what they are
// (API errors left to the harness, the timeout scale, CUPTI and MPS left
// out): docs/DESIGN.md "Under compute-sanitizer".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sanitizer_finding.h"
#include "session_config.h"

namespace dcp {

// memcheck, racecheck, synccheck, initcheck.
inline constexpr std::string_view kSanitizerTools[] = {"memcheck", "racecheck", "synccheck",
                                                       "initcheck"};
bool is_sanitizer_tool(std::string_view tool);

// The status compute-sanitizer exits with when it reported an error
// (--error-exitcode): not one any worker exits with by itself.
inline constexpr int kSanitizerErrorExitCode = 86;
// Per-call deadlines (the kernel's spin bound, the supervisor's heartbeat)
// and the start-up deadline are this many times longer under the sanitizer:
// instrumented kernels run 10-100x slower.
inline constexpr double kSanitizerTimeoutScale = kSanitizedTimeoutScale;  // session_config.h
// At most this many errors are printed per worker (the rest only counted).
inline constexpr int kSanitizerPrintLimit = 100;

// $DCP_COMPUTE_SANITIZER, else compute-sanitizer on $PATH, else
// /usr/local/cuda/bin/compute-sanitizer; nullopt when none is executable.
std::optional<std::string> find_compute_sanitizer();

// What goes before the worker's own argv: the sanitizer, its options, and
// its log file (one per worker, written by the sanitizer, read by the
// supervisor).
std::vector<std::string> sanitizer_argv_prefix(const std::string& sanitizer_path,
                                               const std::string& tool,
                                               const std::string& log_file);

// Parses the sanitizer's report text. Every error record ("Invalid __global__
// read", "Race reported", "Barrier error", "Uninitialized ... read", "Program
// hit ...") becomes a finding with whatever of kernel, address, thread and
// block it names. Lines without the "=========" prefix (the worker's own
// output) are ignored. An "ERROR SUMMARY: N errors" with N > 0 and no record
// parsed yields one finding saying so (never silently zero). `rank` is
// copied into each finding.
std::vector<SanitizerFinding> parse_sanitizer_report(std::string_view text, const std::string& tool,
                                                     int rank);

// One worker's log, read as it grows: read_new() returns the findings of the
// records completed since the last call (a record still being written is
// kept for the next one); read_new(true) at the end parses whatever is left.
class SanitizerLog {
 public:
  SanitizerLog(std::string path, std::string tool, int rank)
      : path_(std::move(path)), tool_(std::move(tool)), rank_(rank) {}
  std::vector<SanitizerFinding> read_new(bool final = false);
  const std::string& path() const { return path_; }
  // The number of errors the sanitizer's own summary counted (-1: no summary yet).
  int summary_errors() const { return summary_errors_; }

 private:
  std::string path_, tool_;
  int rank_;
  uint64_t offset_ = 0;
  int summary_errors_ = -1;
  int findings_so_far_ = 0;
};

// The end of a record stream: the offset just past the last complete record
// in `text` (a record is complete once a later top-level line or a bare
// "=========" separator follows it). Exposed for tests.
size_t complete_records_end(std::string_view text);

}  // namespace dcp
