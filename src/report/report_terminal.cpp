#include "report_terminal.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

namespace dcp {
namespace {

constexpr const char* kRed = "\x1b[31;1m";
constexpr const char* kGreen = "\x1b[32;1m";
constexpr const char* kYellow = "\x1b[33m";
constexpr const char* kDim = "\x1b[2m";
constexpr size_t kMaxDetailedFailures = 10;
constexpr size_t kMaxMismatchesPerCase = 3;
constexpr size_t kMaxReplayLines = 20;
constexpr size_t kNumSlowest = 5;
constexpr size_t kProgressWidth = 110;
constexpr auto kPlainProgressInterval = std::chrono::seconds(5);
constexpr auto kTtyStatusEvery = std::chrono::milliseconds(250);
constexpr auto kPlainStatusEvery = std::chrono::seconds(10);
constexpr size_t kMaxFailureDetails = 4;  // rank errors and mismatches under failure()

bool counts_as_failure(const CaseResult& r) {
  return r.status == CaseStatus::kFail || r.status == CaseStatus::kError;
}

std::string world_line(const SessionConfig& config) {
  const Geometry& g = config.geometry;
  return fmt::format("world {}, geometry {} (H={} D={} maxT={}{})", config.world,
                     g.name.empty() ? "custom" : g.name, g.heads_per_rank, g.head_dim,
                     g.max_tokens,
                     g.storage_heads > 0 ? fmt::format(" in {}-head storage", g.storage_heads)
                                         : std::string());
}

}  // namespace

TerminalStyle detect_terminal_style(int verbosity) {
  TerminalStyle s;
  s.verbosity = verbosity;
  s.tty = ::isatty(STDOUT_FILENO) == 1;
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  s.color = s.tty && no_color == nullptr && !(term != nullptr && std::string(term) == "dumb");
  return s;
}

std::vector<std::pair<std::string, std::string>> case_axes(const Case& c) {
  return axis_labels(c);
}

std::vector<std::string> failures_by_axis(const std::vector<CaseResult>& cases,
                                          size_t max_lines) {
  struct Tally {
    int failed = 0;
    int total = 0;
  };
  std::map<std::string, Tally> tally;  // "axis=value"
  for (const auto& r : cases) {
    if (r.status == CaseStatus::kSkipped) continue;
    if (!r.scenario) continue;  // an id the supervisor could not parse
    for (const auto& [axis, value] : case_axes(*r.scenario)) {
      Tally& t = tally[axis + "=" + value];
      ++t.total;
      if (counts_as_failure(r)) ++t.failed;
    }
  }
  std::vector<std::pair<std::string, Tally>> rows;
  for (const auto& [key, t] : tally) {
    if (t.failed > 0) rows.emplace_back(key, t);
  }
  // Highest failing fraction first: "fails only with padded + graph" shows as
  // the rows at 100%. Ties: more failures first, then name for stability.
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    const double fa = double(a.second.failed) / a.second.total;
    const double fb = double(b.second.failed) / b.second.total;
    if (fa != fb) return fa > fb;
    return a.second.failed > b.second.failed;
  });
  std::vector<std::string> lines;
  for (const auto& [key, t] : rows) {
    if (lines.size() == max_lines) break;
    lines.push_back(fmt::format("{}: {} failed / {}{}", key, t.failed, t.total,
                                t.failed == t.total ? " (all)" : ""));
  }
  return lines;
}

std::string format_mismatch(const Mismatch& m) {
  // dim -1: the row's combined LSE (fp32 ulps), not an output element.
  const std::string where = m.dim >= 0 ? fmt::format("dim {}", m.dim) : "combined LSE";
  std::string line = fmt::format(
      "rank {} op {} token {} head {} {}: got {:.9g} want {:.9g} ({:.3g} ulps, tolerance "
      "{:.3g})",
      m.rank, m.op_idx, m.token, m.head, where, m.got, m.want, m.err_ulps, m.tolerance_ulps);
  if (!m.likely_source.empty()) line += "; likely " + m.likely_source;
  return line;
}

std::string format_duration(double ms) {
  if (ms < 1000) return fmt::format("{:.0f} ms", ms);
  if (ms < 120000) return fmt::format("{:.1f} s", ms / 1000);
  return fmt::format("{:.1f} min", ms / 60000);
}

TerminalReporter::TerminalReporter(std::FILE* out, TerminalStyle style)
    : out_(out), style_(style) {}

std::string TerminalReporter::paint(const std::string& text, const char* ansi) const {
  return style_.color ? fmt::format("{}{}\x1b[0m", ansi, text) : text;
}

std::string TerminalReporter::status_word(CaseStatus s) const {
  switch (s) {
    case CaseStatus::kPass: return paint("PASS ", kGreen);
    case CaseStatus::kFail: return paint("FAIL ", kRed);
    case CaseStatus::kError: return paint("ERROR", kRed);
    case CaseStatus::kSkipped: return paint("SKIP ", kYellow);
  }
  return "?";
}

void TerminalReporter::clear_progress() {
  if (progress_shown_) {
    fmt::print(out_, "\r\x1b[K");
    progress_shown_ = false;
  }
}

void TerminalReporter::show_progress(const std::string& line) {
  const std::string shown =
      line.size() > kProgressWidth ? line.substr(0, kProgressWidth - 3) + "..." : line;
  fmt::print(out_, "\r\x1b[K{}", shown);
  std::fflush(out_);
  progress_shown_ = true;
}

void TerminalReporter::note(const std::string& line) {
  clear_progress();
  fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

void TerminalReporter::info(const std::string& line) {
  if (style_.verbosity >= 0) note(line);
}

void TerminalReporter::detail(const std::string& line) {
  if (style_.verbosity >= 1) note(line);
}

void TerminalReporter::block(const std::string& text) {
  clear_progress();
  fmt::print(out_, "{}", text);
  std::fflush(out_);
}

void TerminalReporter::status(const std::string& line, bool now) {
  if (style_.verbosity < 0) return;
  const auto t = std::chrono::steady_clock::now();
  if (style_.tty) {
    if (!now && t - last_status_ < kTtyStatusEvery) return;
    show_progress(line);
  } else {
    if (t - last_status_ < kPlainStatusEvery) return;
    note(line);
  }
  last_status_ = t;
}

void TerminalReporter::failure(const std::string& label, const CaseResult& r) {
  clear_progress();
  fmt::print(out_, "{} {} ({}): {}\n", paint(r.status == CaseStatus::kFail ? "FAIL" : "ERROR", kRed),
             label, failure_type(r), r.message);
  size_t shown = 0;
  for (const RankCaseResult& k : r.ranks) {
    if (!k.error.empty() && shown < kMaxFailureDetails) {
      fmt::print(out_, "  rank {}: {}\n", k.rank, k.error);
      ++shown;
    }
    for (const Mismatch& m : k.first_mismatches) {
      if (shown == kMaxFailureDetails) break;
      fmt::print(out_, "  {}\n", format_mismatch(m));
      ++shown;
    }
  }
  fmt::print(out_, "  {}\n", r.replay);
  std::fflush(out_);
}

void TerminalReporter::verdict(int exit_code, const std::string& detail) {
  clear_progress();
  fmt::print(out_, "{}: {}\n", paint(verdict_word(exit_code), exit_code == 0 ? kGreen : kRed),
             detail);
  std::fflush(out_);
}

void TerminalReporter::begin(const std::string& header_line, int num_cases) {
  num_cases_ = num_cases;
  start_ = std::chrono::steady_clock::now();
  last_plain_progress_ = start_;
  last_status_ = start_;
  info(header_line);
}

void TerminalReporter::case_started(int index, const std::string& case_id) {
  if (!style_.tty || style_.verbosity < 0) return;
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = fmt::format("[{}/{}] {:.0f}s {}running {}", index + 1, num_cases_,
                                 elapsed_s,
                                 num_bad_ > 0 ? fmt::format("{} failed, ", num_bad_) : "",
                                 case_id);
  show_progress(line);
}

void TerminalReporter::case_finished(int index, const CaseResult& r) {
  ++num_done_;
  const bool bad = counts_as_failure(r);
  if (bad) ++num_bad_;
  const bool show = style_.verbosity > 0 || bad ||
                    (r.status == CaseStatus::kSkipped && style_.verbosity >= 0);
  if (show) {
    std::string line = fmt::format("{} [{}/{}] {} ({})", status_word(r.status), index + 1,
                                   num_cases_, r.case_id, format_duration(r.elapsed_ms));
    if (!r.message.empty()) line += ": " + r.message;
    note(line);
  }
  // Off a TTY: a plain progress line at each tenth of the run, at most every
  // kPlainProgressInterval, so short runs print none and CI logs stay short.
  const auto now = std::chrono::steady_clock::now();
  if (!style_.tty && style_.verbosity == 0 && num_done_ >= next_plain_progress_ &&
      num_done_ < num_cases_ && now - last_plain_progress_ >= kPlainProgressInterval) {
    last_plain_progress_ = now;
    note(fmt::format("progress: {}/{} cases, {} failed, {:.0f} s", num_done_, num_cases_,
                     num_bad_, std::chrono::duration<double>(now - start_).count()));
  }
  while (num_done_ >= next_plain_progress_) next_plain_progress_ += std::max(1, num_cases_ / 10);
}

void TerminalReporter::print_details(const RunReport& report) const {
  const SessionConfig& config = report.config;
  std::string backend = config.backend == BackendKind::kHost ? "host" : "gpu";
  std::string mps = config.mps == MpsMode::kOn ? "on" : (config.mps == MpsMode::kOff ? "off" : "auto");
  if (report.environment) {
    backend = report.environment->backend;
    if (!report.environment->mps_mode.empty()) mps = report.environment->mps_mode;
  }
  fmt::print(out_, "backend {}, {}, MPS {}; {}\n", backend,
             kernels_text(config.kernel, config.against ? &*config.against : nullptr), mps,
             world_line(config));
  if (report.environment && report.environment->ranks_share_gpu) {
    std::string map;
    const auto& rank_gpu = report.environment->rank_gpu;
    for (size_t r = 0; r < rank_gpu.size(); ++r) {
      map += fmt::format("{}{}->GPU{}", r == 0 ? "" : " ", r, rank_gpu[r]);
    }
    fmt::print(out_, "note: ranks share GPUs ({}): they time-slice; correctness holds, "
               "timings mean nothing\n", map);
  }
  const bool mstress = std::any_of(report.cases.begin(), report.cases.end(), [](const auto& r) {
    return r.status != CaseStatus::kSkipped && r.scenario && r.scenario->mstress;
  });
  if (report.environment && mstress && !report.environment->memory_stress.empty()) {
    fmt::print(out_, "memory stress: {}\n", report.environment->memory_stress);
  }
  if (report.environment) {
    for (const std::string& w : report.environment->residency_warnings) {
      fmt::print(out_, "warning: {}\n", w);
    }
  }
  std::vector<const CaseResult*> ran;
  for (const auto& r : report.cases) {
    if (r.status != CaseStatus::kSkipped) ran.push_back(&r);
  }
  std::sort(ran.begin(), ran.end(),
            [](const CaseResult* a, const CaseResult* b) { return a->elapsed_ms > b->elapsed_ms; });
  if (ran.size() > 1 && report.command != "replay") {
    fmt::print(out_, "slowest cases:\n");
    for (size_t i = 0; i < std::min(kNumSlowest, ran.size()); ++i) {
      fmt::print(out_, "  {:>9}  {}\n", format_duration(ran[i]->elapsed_ms), ran[i]->case_id);
    }
  }
}

void TerminalReporter::print_failures(const RunReport& report) const {
  std::vector<const CaseResult*> bad;
  for (const auto& r : report.cases) {
    if (counts_as_failure(r)) bad.push_back(&r);
  }
  if (bad.empty()) return;
  // With a single failure its id already says everything the table would.
  const auto axis_lines = failures_by_axis(report.cases);
  if (!axis_lines.empty() && bad.size() > 1) {
    fmt::print(out_, "failures by axis value:\n");
    for (const auto& line : axis_lines) fmt::print(out_, "  {}\n", line);
  }
  fmt::print(out_, "failed cases:\n");
  for (size_t i = 0; i < std::min(bad.size(), kMaxDetailedFailures); ++i) {
    const CaseResult& r = *bad[i];
    fmt::print(out_, "  {} {}{}\n", status_word(r.status), r.case_id,
               r.message.empty() ? "" : ": " + r.message);
    for (const std::string& line : r.diagnosis) fmt::print(out_, "      {}\n", line);
    size_t shown = 0;
    for (const auto& rank : r.ranks) {
      // The session's message often already quotes each rank's error.
      if (!rank.error.empty() && r.message.find(rank.error) == std::string::npos) {
        fmt::print(out_, "      rank {}: {}\n", rank.rank, rank.error);
      }
      for (const auto& m : rank.first_mismatches) {
        if (shown++ == kMaxMismatchesPerCase) break;
        fmt::print(out_, "      {}\n", format_mismatch(m));
      }
    }
  }
  if (bad.size() > kMaxDetailedFailures) {
    fmt::print(out_, "  ... and {} more failed cases (all are in --json/--junit)\n",
               bad.size() - kMaxDetailedFailures);
  }
  fmt::print(out_, "replay:\n");
  for (size_t i = 0; i < std::min(bad.size(), kMaxReplayLines); ++i) {
    fmt::print(out_, "  {}\n", bad[i]->replay);
  }
}

void TerminalReporter::summary(const RunReport& report) {
  clear_progress();
  if (style_.verbosity >= 0) print_details(report);
  print_failures(report);
  const Counts c = count_results(report.cases);
  for (const auto& r : report.cases) {
    if (r.status == CaseStatus::kSkipped && !r.message.empty() && style_.verbosity >= 0) {
      fmt::print(out_, "skipped: {}\n", r.message);  // the first reason; all are in the reports
      break;
    }
  }
  if (const std::optional<Agreement> a = run_agreement(report.cases)) {
    if (style_.verbosity >= 0 || a->output.num_beyond + a->lse.num_beyond > 0) {
      fmt::print(out_, "{}\n", agreement_line(*a, report.config));
    }
  }
  if (style_.verbosity >= 1 && report.environment) {
    fmt::print(out_,
               "session start-up {:.2f} s (GPUs, MPS, workers, workspaces, kernel init), "
               "shut-down {:.2f} s (workers {:.2f}, MPS {:.2f}, files {:.2f})\n",
               report.environment->startup_s, report.environment->teardown_s,
               report.environment->teardown.workers_s, report.environment->teardown.mps_s,
               report.environment->teardown.rest_s);
  }
  if (style_.verbosity >= 1 && !report.phases.empty()) fmt::print(out_, "{}\n", report.phases.line());
  if (const std::string check = report.phases.check_line(); style_.verbosity >= 0 && !check.empty()) {
    fmt::print(out_, "{}\n", check);
  }
  verdict(report.exit_code,
          fmt::format("{} cases: {} passed, {} failed, {} errors, {} skipped in {} [backend {}]",
                      c.total, c.passed, c.failed, c.errors, c.skipped,
                      format_duration(report.wall_s * 1000),
                      report.config.backend == BackendKind::kHost ? "host" : "gpu"));
}

}  // namespace dcp
