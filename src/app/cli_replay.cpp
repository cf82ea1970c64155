// `dcp-check replay <token>`: rerun exactly one case (same inputs, same call
// sequence) in a fresh session; with --repeat K, tell flaky from deterministic
// by counting failed runs and comparing every rank's output hash across runs.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli.h"
#include "cli_common.h"
#include "errors.h"
#include "options.h"
#include "replay.h"
#include "report_terminal.h"
#include "session.h"
#include "shrink_runner.h"

namespace dcp {
namespace {

constexpr const char* kReplaySuite = "replay";

// Hashes of every rank, ordered by rank; empty when the run did not complete.
std::vector<uint64_t> rank_hashes(const CaseResult& r) {
  if (r.status != CaseStatus::kPass && r.status != CaseStatus::kFail) return {};
  std::vector<std::pair<int, uint64_t>> by_rank;
  for (const auto& k : r.ranks) by_rank.emplace_back(k.rank, k.output_hash);
  std::sort(by_rank.begin(), by_rank.end());
  std::vector<uint64_t> out;
  for (const auto& [rank, hash] : by_rank) out.push_back(hash);
  return out;
}

RepeatSummary summarize_repeats(const std::vector<CaseResult>& runs) {
  RepeatSummary s;
  std::optional<std::vector<uint64_t>> first;
  for (const auto& r : runs) {
    if (r.status == CaseStatus::kSkipped) continue;
    ++s.runs;
    if (r.status != CaseStatus::kPass) ++s.failed_runs;
    std::vector<uint64_t> h = rank_hashes(r);
    if (h.empty()) continue;
    if (!first) {
      first = h;
    } else if (*first != h) {
      s.hashes_identical = false;
    }
  }
  return s;
}

int replay_command_main(const ReplayOptions& opts, const std::vector<std::string>& argv) {
  const ValidReplay v = validate_replay_options(opts);
  const Case& c = v.the_case;
  const std::string replay = replay_command(v.config, v.config.world, c);
  TerminalReporter term(stdout, detect_terminal_style(v.report.verbosity()));
  RunReport report = make_run_report("replay", argv, v.config);
  report.suite = kReplaySuite;
  report.seed = c.seed;
  InterruptGuard interrupts;
  const auto start = std::chrono::steady_clock::now();
  term.begin(fmt::format("dcp-check replay: {} x{}, world {}, backend {}", format_case_id(c),
                         v.repeat, v.config.world,
                         v.config.backend == BackendKind::kHost ? "host" : "gpu"),
             v.repeat);
  auto finish = [&](int exit_code) {
    report.exit_code = exit_code;
    report.repeat = summarize_repeats(report.cases);
    report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.interrupted_by = interrupts.signal_received();
  };
  try {
    // A hang or crash kills the session; later repeats get a fresh one so
    // that K runs really are K attempts (the restarting session stress and
    // shrink use: a kernel or harness fault mid-case becomes the case's result).
    RestartingSession session(v.config);
    for (int k = 0; k < v.repeat; ++k) {
      if (interrupts.signal_received()) {
        report.cases.push_back(skipped_result(c, kReplaySuite, "not run: interrupted", replay));
        continue;
      }
      term.case_started(k, format_case_id(c));
      CaseResult r = session.run(c, kReplaySuite);
      if (session.environment() != nullptr) report.environment = *session.environment();
      term.case_finished(k, r);
      report.phases.add(r);
      report.cases.push_back(std::move(r));
    }
  } catch (const std::exception& e) {
    finish(exit_code(findings_of(e)));
    write_reports(v.report, report);
    throw;
  }
  finish(exit_code(findings_of(report.cases, interrupts.signal_received())));
  if (v.repeat > 1) {
    const RepeatSummary& s = *report.repeat;
    term.note(fmt::format("repeat: {} of {} runs failed; output hashes {} ({})", s.failed_runs,
                          s.runs, s.hashes_identical ? "identical" : "DIFFER",
                          s.hashes_identical ? (s.failed_runs == 0 || s.failed_runs == s.runs
                                                    ? "deterministic"
                                                    : "deterministic bits, flaky verdict")
                                             : "flaky"));
  }
  term.summary(report);
  write_reports(v.report, report);  // after the summary: a write error is the last line
  return report.exit_code;
}

}  // namespace

CLI::App* add_replay_command(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<ReplayOptions>();
  CLI::App* sub = app.add_subcommand(
      "replay", "Rerun exactly one case from its token w<world>-<case id> (printed on failure)");
  sub->add_option("token", opts->token, "w<world>-<case id>, e.g. w4-dcp2-kimi-...")->required();
  sub->add_option("-r,--repeat", opts->repeat,
                  fmt::format("Run it K times (1..{}): counts failures, compares output hashes",
                              kMaxRepeat));
  add_session_options(sub, opts->session);
  add_report_options(sub, opts->report);
  sub->callback([opts, &ctx] {
    ctx.action = [opts, &ctx] { return replay_command_main(*opts, ctx.argv); };
  });
  return sub;
}

}  // namespace dcp
