// `dcp-check run` (also the default command): build the suite, start one
// Session, run every case, report. Once the session dies (a hang, a crash) the
// remaining cases are skipped, each saying why; exit code from the results.
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "cli_common.h"
#include "coverage.h"
#include "command_lifecycle.h"
#include "options.h"
#include "run_report_command.h"
#include "session.h"
#include "sha256.h"

namespace dcp {
namespace {

class RunCommand : public RunReportCommand {
 public:
  RunCommand(const ValidRun& v, const std::vector<std::string>& argv)
      : RunReportCommand("run", argv, v.config, v.report), v_(v) {
    // Planned for the facts known before the session starts (one GPU per
    // rank); run() generates it again once the session has found its GPUs.
    planned_ = shard_of(select_cases(v.config.world, v.config.geometry, v.selection,
                                     run_target(v.config)));
    report_.suite = v.selection.suite;
    report_.filter = v.selection.filter;
    report_.seed = v.selection.seed;
  }

  void run(CommandLifecycle& life) override {
    const SessionConfig& config = v_.config;
    const Geometry& g = config.geometry;
    // The suite is generated for the session's real target (e.g. whether
    // ranks share a GPU), so the session starts before the header names the
    // number of cases.
    auto session = std::make_unique<Session>(config);
    report_.environment = session->environment();
    const SuiteOptions suite_opts =
        suite_options(config.world, g, v_.selection, session->target());
    planned_ = shard_of(select_cases(config.world, g, v_.selection, session->target()));
    report_.coverage = suite_coverage(planned_, suite_opts);  // of what runs, --filter included
    if (const std::string note = shard_note(v_.shard); !note.empty()) life.term().info(note);
    life.term().begin(
        fmt::format("dcp-check: suite {}{}, {}, world {} ({}), geometry {}, backend {}",
                    v_.selection.suite,
                    v_.selection.filter.empty() ? "" : " --filter " + v_.selection.filter,
                    cases_text(), config.world, describe_groups(config.world),
                    g.name.empty() ? "custom" : g.name,
                    config.backend == BackendKind::kHost ? "host" : "gpu"),
        static_cast<int>(planned_.size()));
    life.term().info(report_.coverage->total_line());
    if (!config.sanitize_tool.empty()) life.term().info(sanitize_note(config));
    size_t warned = 0;    // residency warnings printed so far
    bool broken = false;  // run_case threw: the session cannot run another case
    const std::string& suite = v_.selection.suite;
    run_cases(
        life,
        [&](const Case& c) {
          CaseResult r = result_or_error(
              c, suite, replay_for(c), [&] { return session->run_case(c, suite); }, broken);
          // A residency warning as soon as a kernel shape first shows it (the
          // summary repeats them with every rank that saw it).
          const std::vector<std::string>& warnings = session->environment().residency_warnings;
          for (; warned < warnings.size(); ++warned) life.term().info("warning: " + warnings[warned]);
          return r;
        },
        [&] { return broken || session->dead(); });
    // Found while the cases ran (launch observation, residency warnings).
    report_.environment->launch_observation = session->environment().launch_observation;
    report_.environment->residency_warnings = session->environment().residency_warnings;
    const auto teardown = std::chrono::steady_clock::now();
    report_.environment->teardown = session->shut_down();  // workers, workspaces, MPS
    add_late_sanitizer_findings(life.term(), session->late_findings());
    session.reset();
    report_.environment->teardown_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - teardown).count();
  }

 private:
  // This shard's part of the suite (all of it unsharded), recorded in the report.
  std::vector<Case> shard_of(const std::vector<Case>& all) {
    if (!v_.shard.sharded()) return all;
    std::string ids;
    for (const Case& c : all) ids += format_case_id(c) + "\n";
    ReportShard s;
    s.index = v_.shard.index;
    s.count = v_.shard.count;
    s.source = v_.shard.source;
    s.suite_cases = static_cast<int64_t>(all.size());
    s.suite_sha256 = sha256_hex(ids);
    s.base_seed = v_.selection.seed;
    report_.shard = s;
    return take_shard(all, v_.shard);
  }
  std::string cases_text() const {
    if (!report_.shard) return fmt::format("{} cases", planned_.size());
    return fmt::format("shard {}: {} of {} cases", v_.shard.text(), planned_.size(),
                       report_.shard->suite_cases);
  }

  const ValidRun& v_;
};

}  // namespace

CLI::App* add_run_command(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run", "Run a suite on every rank and check every element (the default command)");
  add_world_option(sub, opts->world);
  add_geometry_options(sub, opts->geometry);
  add_selection_options(sub, opts->selection);
  add_session_options(sub, opts->session);
  add_sanitize_option(sub, opts->session);
  add_report_options(sub, opts->report, {.json = "docs/report-format.md", .junit = true});
  add_shard_option(sub, opts->shard);
  sub->callback([opts, &ctx] {
    ctx.action = [opts, &ctx] {
      const ValidRun v = validate_run_options(*opts);
      return execute_command<RunCommand>(v.report.verbosity(), v, ctx.argv);
    };
  });
  return sub;
}

}  // namespace dcp
