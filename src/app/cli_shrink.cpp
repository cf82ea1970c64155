// `dcp-check shrink <token>`: rerun one case from its replay token and, if it
// fails, reduce it to a minimal case that still fails the same way. Exit 1
// when the case fails (a bug, now with a smaller reproducer), 0 when it
// passes (nothing to shrink), 2 for a bad token or flag.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "cli.h"
#include "cli_common.h"
#include "duration.h"
#include "errors.h"
#include "options.h"
#include "replay.h"
#include "report_terminal.h"
#include "shrink_runner.h"

namespace dcp {
namespace {

constexpr const char* kShrinkSuite = "shrink";

struct ShrinkOptions {
  std::string token;
  SessionOptions session;
  int max_attempts = ShrinkLimits{}.max_attempts;
  std::string max_time = "10m";
  bool quiet = false;
};

int shrink_command_main(const ShrinkOptions& o) {
  const ReplayToken token = parse_replay_token(o.token);
  ReportOptions report;
  report.quiet = o.quiet;
  const SessionConfig config =
      make_session_config(o.session, report, token.world, token.the_case.geometry);
  if (o.max_attempts < 1 || o.max_attempts > 100000) {
    throw UsageError(
        fmt::format("--shrink-attempts {}: must be between 1 and 100000", o.max_attempts));
  }
  ShrinkLimits limits;
  limits.max_attempts = o.max_attempts;
  limits.max_seconds = parse_duration_seconds(o.max_time);

  const Case& c = token.the_case;
  if (!o.quiet) {
    std::printf("dcp-check shrink: %s, world %d, backend %s\n", format_case_id(c).c_str(),
                token.world, config.backend == BackendKind::kHost ? "host" : "gpu");
    std::fflush(stdout);
  }
  InterruptGuard interrupts;  // Ctrl-C stops the shrink between candidates
  RestartingSession session(config);
  const CaseResult first = session.run(c, kShrinkSuite);
  if (const int sig = interrupts.signal_received()) return exit_code(findings_of({first}, sig));
  if (first.status == CaseStatus::kSkipped) {
    throw HarnessError(fmt::format("{} did not run: {}", first.case_id, first.message));
  }
  if (first.status == CaseStatus::kPass) {
    std::printf("PASS: %s passes: nothing to shrink\n", first.case_id.c_str());
    return exit_code(findings_of({first}, 0));
  }
  std::printf("%s: %s: %s\n", first.status == CaseStatus::kFail ? "FAIL" : "ERROR",
              first.case_id.c_str(), first.message.c_str());
  for (const RankCaseResult& k : first.ranks) {
    if (!k.first_mismatches.empty()) {
      std::printf("  %s\n", format_mismatch(k.first_mismatches.front()).c_str());
      break;
    }
  }
  std::fflush(stdout);
  if (!is_kernel_failure(first)) {
    // A harness error or a skip says nothing about the kernel: shrinking it
    // would chase the harness, not the bug.
    std::printf("not shrinking: the case did not fail the kernel check (%s)\n",
                std::string(to_string(first.status)).c_str());
    return exit_code(findings_of({first}, 0));
  }
  limits.cancelled = [&interrupts] { return interrupts.signal_received() != 0; };
  shrink_and_print(session, c, first, limits, stdout, o.quiet);
  // The shrunk case's own result was printed; the exit code is the original's.
  return exit_code(findings_of({first}, interrupts.signal_received()));
}

}  // namespace

CLI::App* add_shrink_command(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<ShrinkOptions>();
  CLI::App* sub = app.add_subcommand(
      "shrink",
      "Rerun a case from its token w<world>-<case id>; if it fails, reduce it to the smallest "
      "case that still fails (exit 1), or say it passes (exit 0)");
  sub->add_option("token", opts->token, "w<world>-<case id>, as printed by a failure")->required();
  add_session_options(sub, opts->session);
  sub->add_option("--shrink-attempts", opts->max_attempts,
                  fmt::format("Most candidates to run (default {})", opts->max_attempts));
  sub->add_option("--shrink-time", opts->max_time,
                  "Most time to spend: 90s, 10m, 1h or seconds (default 10m)");
  sub->add_flag("-q,--quiet", opts->quiet, "Only the verdict and the minimal case");
  sub->callback([opts, &ctx] { ctx.action = [opts] { return shrink_command_main(*opts); }; });
  return sub;
}

}  // namespace dcp
