// `dcp-check merge A.json B.json ...`: the --json reports of a sharded run,
// stress campaign or selftest (--shard K/N) as one: the terminal summary of
// the whole run, one verdict and exit code, and --json/--junit files of the
// merged report (selftest: --json only).
// Reports that are not shards of one run are refused (exit 2, one line).
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "cli.h"
#include "errors.h"
#include "options.h"
#include "report_file.h"
#include "report_junit.h"
#include "report_merge.h"
#include "report_terminal.h"

namespace dcp {
namespace {

struct MergeOptions {
  std::vector<std::string> inputs;
  ReportOptions report;  // --json, --junit, -q, -v
};

ShardReport read_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("merge: {}: cannot be read", path));
  ShardReport s{path, {}};
  try {
    s.json = nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("merge: {}: not JSON ({})", path, e.what()));
  }
  return s;
}

int run_merge(const MergeOptions& o) {
  validate_report_options(o.report);
  std::vector<ShardReport> shards;
  for (const std::string& path : o.inputs) shards.push_back(read_report(path));
  const MergedReport m = merge_reports(shards);
  const RunReport& r = m.report;
  TerminalReporter term(stdout, detect_terminal_style(o.report.verbosity()));
  if (m.selftest) {
    if (!o.report.junit_path.empty()) throw UsageError("merge: --junit: selftest reports have no JUnit");
    if (!o.report.json_path.empty()) write_report_files({{o.report.json_path, m.json.dump(2) + "\n"}});
    term.verdict(r.exit_code, m.verdict);
    return r.exit_code;
  }
  term.info(fmt::format("dcp-check merge: {} report{} of {} shard{}: {} {}, world {}, geometry {}, "
                        "backend {}",
                        shards.size(), shards.size() == 1 ? "" : "s", m.num_shards,
                        m.num_shards == 1 ? "" : "s", r.command,
                        r.command == "stress" ? std::string("campaign") : "suite " + r.suite,
                        r.config.world, r.config.geometry.name.empty() ? "custom" : r.config.geometry.name,
                        r.config.backend == BackendKind::kHost ? "host" : "gpu"));
  std::vector<ReportFile> files;
  if (!o.report.json_path.empty()) files.push_back({o.report.json_path, m.json.dump(2) + "\n"});
  if (!o.report.junit_path.empty()) files.push_back({o.report.junit_path, junit_xml(r)});
  write_report_files(files);
  if (r.command == "stress") {
    const auto& s = m.json.at("stress");
    for (const CaseResult& c : r.cases) term.note("replay: " + c.replay);
    term.verdict(r.exit_code, fmt::format("{} scenarios, {} calls, {} failure{} over {} shards",
                                          s.value("num_scenarios", int64_t{0}),
                                          s.value("num_calls", int64_t{0}), r.cases.size(),
                                          r.cases.size() == 1 ? "" : "s", m.num_shards));
  } else {
    term.summary(r);
  }
  return r.exit_code;
}

}  // namespace

CLI::App* add_merge_command(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<MergeOptions>();
  CLI::App* sub = app.add_subcommand(
      "merge",
      "Merge the --json reports of the shards (--shard K/N) of one run, stress campaign or "
      "selftest into one verdict, exit code, JSON and JUnit (docs/ci.md)");
  sub->add_option("reports", opts->inputs, "The shards' --json reports, every shard exactly once")
      ->required();
  add_report_options(sub, opts->report,
                     {.json = "the merged report, as one run's; docs/report-format.md",
                      .junit = true,
                      .verbose = false});
  sub->callback([opts, &ctx] { ctx.action = [opts] { return run_merge(*opts); }; });
  return sub;
}

}  // namespace dcp
