// `dcp-check shrink <token>`: rerun one case from its replay token and, if it
// fails, reduce it to a minimal case that still fails the same way. Exit 1
// when the case fails (a bug, now with a smaller reproducer), 0 when it
// passes (nothing to shrink), 2 for a bad token or flag.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "cli.h"
#include "command_lifecycle.h"
#include "duration.h"
#include "errors.h"
#include "options.h"
#include "replay.h"
#include "shrink_runner.h"

namespace dcp {
namespace {

constexpr const char* kShrinkSuite = "shrink";

struct ShrinkOptions {
  std::string token;
  SessionOptions session;
  int max_attempts = ShrinkLimits{}.max_attempts;
  std::string max_time = "10m";
  ReportOptions report;  // -q
};

struct ValidShrink {
  SessionConfig config;
  Case the_case;
  ShrinkLimits limits;
};

ValidShrink validate_shrink_options(const ShrinkOptions& o) {
  const ReplayToken token = parse_replay_token(o.token);
  validate_report_options(o.report);
  ValidShrink v;
  v.config = make_session_config(o.session, o.report, token.world, token.the_case.geometry);
  if (o.max_attempts < 1 || o.max_attempts > 100000) {
    throw UsageError(
        fmt::format("--shrink-attempts {}: must be between 1 and 100000", o.max_attempts));
  }
  v.limits.max_attempts = o.max_attempts;
  v.limits.max_seconds = parse_duration_seconds(o.max_time);
  v.the_case = token.the_case;
  return v;
}

// The exit code is the original case's: the shrunk case's own result is
// printed, but the bug is the one the token named.
class ShrinkCommand : public CommandBody {
 public:
  explicit ShrinkCommand(const ValidShrink& v) : v_(v) {}

  void run(CommandLifecycle& life) override {
    TerminalReporter& term = life.term();
    const Case& c = v_.the_case;
    term.begin(fmt::format("dcp-check shrink: {}, world {}, backend {}", format_case_id(c),
                           v_.config.world,
                           v_.config.backend == BackendKind::kHost ? "host" : "gpu"),
               0);
    RestartingSession session(v_.config);
    first_ = session.run(c, kShrinkSuite);
    if (life.interrupted() != 0) return;
    if (first_.status == CaseStatus::kSkipped) {
      throw HarnessError(fmt::format("{} did not run: {}", first_.case_id, first_.message));
    }
    if (first_.status == CaseStatus::kPass) return;
    term.failure(first_.case_id, first_);
    if (!is_kernel_failure(first_)) {
      // A harness error says nothing about the kernel: shrinking it would
      // chase the harness, not the bug.
      term.note(fmt::format("not shrinking: the case did not fail the kernel check ({})",
                            to_string(first_.status)));
      return;
    }
    ShrinkLimits limits = v_.limits;
    limits.cancelled = [&life] { return life.interrupted() != 0; };
    minimal_ = shrink_and_print(session, c, first_, limits, term).minimal;
  }

  int exit_code(int interrupted_by) const override {
    return dcp::exit_code(findings_of({first_}, interrupted_by));
  }

  void record(const Outcome& o) override { (void)o; }

  void summary(TerminalReporter& term, const Outcome& o) const override {
    if (o.aborted) {
      term.verdict(o.exit_code, "shrink: stopped");
    } else if (first_.status == CaseStatus::kPass) {
      term.verdict(o.exit_code, first_.case_id + " passes: nothing to shrink");
    } else if (minimal_) {
      term.verdict(o.exit_code, fmt::format("{} fails ({}); minimal failing case {}",
                                            first_.case_id, failure_type(first_),
                                            format_case_id(*minimal_)));
    } else {
      term.verdict(o.exit_code, fmt::format("{}: {}, not shrunk", first_.case_id,
                                            std::string(to_string(first_.status))));
    }
  }

 private:
  const ValidShrink& v_;
  CaseResult first_;
  std::optional<Case> minimal_;
};

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
  add_report_options(sub, opts->report, {.json = "", .verbose = false});
  sub->callback([opts, &ctx] {
    ctx.action = [opts] {
      const ValidShrink v = validate_shrink_options(*opts);
      return execute_command<ShrinkCommand>(opts->report.verbosity(), v);
    };
  });
  return sub;
}

}  // namespace dcp
