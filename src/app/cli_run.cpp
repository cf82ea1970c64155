// `dcp-check run` (also the default command): build the suite, start one
// Session, run every case, report. Once the session dies (a hang, a crash) the
// remaining cases are skipped, each saying why; exit code from the results.
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "cli_common.h"
#include "command_lifecycle.h"
#include "options.h"
#include "run_report_command.h"
#include "session.h"

namespace dcp {
namespace {

class RunCommand : public RunReportCommand {
 public:
  RunCommand(const ValidRun& v, const std::vector<std::string>& argv)
      : RunReportCommand("run", argv, v.config, v.report), v_(v) {
    planned_ = select_cases(v.config.world, v.config.geometry, v.selection);
    report_.suite = v.selection.suite;
    report_.filter = v.selection.filter;
    report_.seed = v.selection.seed;
  }

  void run(CommandLifecycle& life) override {
    const SessionConfig& config = v_.config;
    const Geometry& g = config.geometry;
    life.term().begin(
        fmt::format("dcp-check: suite {}{}, {} cases, world {} ({}), geometry {}, backend {}",
                    v_.selection.suite,
                    v_.selection.filter.empty() ? "" : " --filter " + v_.selection.filter,
                    planned_.size(), config.world, describe_groups(config.world),
                    g.name.empty() ? "custom" : g.name,
                    config.backend == BackendKind::kHost ? "host" : "gpu"),
        static_cast<int>(planned_.size()));
    auto session = std::make_unique<Session>(config);
    report_.environment = session->environment();
    bool broken = false;  // run_case threw: the session cannot run another case
    const std::string& suite = v_.selection.suite;
    run_cases(
        life,
        [&](const Case& c) {
          return result_or_error(
              c, suite, replay_for(c), [&] { return session->run_case(c, suite); }, broken);
        },
        [&] { return broken || session->dead(); });
    const auto teardown = std::chrono::steady_clock::now();
    report_.environment->teardown = session->shut_down();  // workers, workspaces, MPS
    session.reset();
    report_.environment->teardown_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - teardown).count();
  }

 private:
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
  add_report_options(sub, opts->report, {.json = "docs/report-format.md", .junit = true});
  sub->callback([opts, &ctx] {
    ctx.action = [opts, &ctx] {
      const ValidRun v = validate_run_options(*opts);
      return execute_command<RunCommand>(v.report.verbosity(), v, ctx.argv);
    };
  });
  return sub;
}

}  // namespace dcp
