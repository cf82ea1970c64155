// `dcp-check bench`: latency of the direct and stock paths side by side, with
// the upstream method (docs in README "Reading the benchmark"): per token
// count and impl, a CUDA graph of K back-to-back ops replayed R times per
// repeat, M repeats, per-op time = elapsed / (R*K), max over ranks per repeat,
// median over repeats. Each point's output is then checked like any case.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "bench.h"
#include "cli.h"
#include "command_lifecycle.h"
#include "errors.h"
#include "exit_code.h"
#include "options.h"
#include "report_json.h"
#include "session.h"

namespace dcp {
namespace {

struct BenchOptions {
  int world = kMinWorld;
  GeometryOptions geometry;
  SessionOptions session;
  std::string tokens = kDefaultBenchTokens;
  int ops_per_graph = kDefaultOpsPerGraph;
  int repeats = kDefaultBenchRepeats;
  int replays = kDefaultBenchReplays;
  int warmup_replays = kDefaultBenchWarmupReplays;
  bool allow_shared_gpu = false;
  ReportOptions report;  // --json, --csv, -q
};

struct ValidBench {
  SessionConfig config;
  BenchSpec spec;  // impls filled once the GPUs are known
  std::string impl_flag;
  bool allow_shared_gpu = false;
  ReportOptions report;
};

ValidBench validate_bench_options(const BenchOptions& o) {
  ValidBench v;
  validate_world(o.world);
  const Geometry g = resolve_geometry(o.geometry, o.world);
  if (o.session.backend == "host") {
    throw UsageError(
        "bench needs the GPU backend: --backend host runs a CPU model of the protocol, whose "
        "timings say nothing about the kernel (use `dcp-check run --backend host` to test it)");
  }
  if (o.session.impl != "direct" && o.session.impl != "stock" && o.session.impl != "both") {
    throw UsageError(fmt::format("--impl {}: must be direct, stock or both", o.session.impl));
  }
  if (!o.session.against.empty() || o.session.against_exact) {
    throw UsageError(fmt::format("{}: bench compares with the stock path itself (--impl both)",
                                 o.session.against.empty() ? "--against-exact" : "--against"));
  }
  SessionOptions session = o.session;
  session.impl.clear();  // workspaces built at start-up; bench picks impls per point
  v.config = make_session_config(session, o.report, o.world, g);
  if (!v.config.kernel.has(DCP_CAP_GRAPH_SAFE)) {
    throw UsageError(
        fmt::format("bench times CUDA graphs of K ops, but kernel '{}' does not declare "
                    "graph-safe",
                    v.config.kernel.name));
  }
  v.impl_flag = o.session.impl;
  v.spec.tokens = parse_bench_tokens(o.tokens, g.max_tokens);
  v.spec.ops_per_graph = o.ops_per_graph;
  v.spec.repeats = o.repeats;
  v.spec.replays = o.replays;
  v.spec.warmup_replays = o.warmup_replays;
  validate_bench_counts(v.spec);
  if (o.warmup_replays < 0 || o.warmup_replays > 100000) {
    throw UsageError(fmt::format("--warmup {}: must be in [0, 100000]", o.warmup_replays));
  }
  validate_report_options(o.report);
  v.allow_shared_gpu = o.allow_shared_gpu;
  v.report = o.report;
  return v;
}

nlohmann::json environment_json(const EnvironmentInfo& env) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuInfo& g : env.gpus) gpus.push_back({{"index", g.index}, {"name", g.name}});
  return {{"gpus", gpus},
          {"rank_gpu", env.rank_gpu},
          {"ranks_share_gpu", env.ranks_share_gpu},
          {"mps", env.mps_mode},
          {"driver", env.driver_version},
          {"cuda_runtime", env.cuda_runtime_version},
          {"nccl", env.nccl_version},
          {"dcp_check", env.dcp_version},
          {"git_revision", env.git_revision},
          {"hostname", env.hostname}};
}

// The report files are written once there are results: a bench that could
// not start has none.
class BenchCommand : public CommandBody {
 public:
  BenchCommand(const ValidBench& v, const std::vector<std::string>& argv) : v_(v), argv_(argv) {}

  void run(CommandLifecycle& life) override {
    Session session(v_.config);
    env_ = session.environment();
    BenchSpec spec = v_.spec;
    std::string note;
    spec.impls = bench_impls(v_.impl_flag, env_->ranks_share_gpu, v_.allow_shared_gpu, &note);
    life.term().begin(
        fmt::format("dcp-check bench: {} ranks on {} GPU(s) ({}), driver {}, CUDA {}, NCCL {}",
                    v_.config.world, env_->gpus.size(),
                    env_->gpus.empty() ? "?" : env_->gpus.front().name, env_->driver_version,
                    env_->cuda_runtime_version,
                    env_->nccl_version.empty() ? "not loaded" : env_->nccl_version),
        0);
    result_ = session.run_bench(spec);
    if (!note.empty()) result_->notes.push_back(note);
  }

  int exit_code(int interrupted_by) const override {
    Findings f = bench_findings(*result_);
    f.interrupted_by = interrupted_by;
    return dcp::exit_code(f);
  }

  void record(const Outcome& o) override { (void)o; }

  void summary(TerminalReporter& term, const Outcome& o) const override {
    if (result_) term.block(bench_table(*result_));
    term.verdict(o.exit_code, !result_             ? "bench: stopped before any result"
                              : o.exit_code == 0 ? "bench: every output check passed"
                                                 : "bench: see the output check lines above");
  }

  std::vector<ReportFile> report_files() const override {
    if (!result_) return {};
    std::vector<ReportFile> files;
    if (!v_.report.json_path.empty()) {
      nlohmann::json j = bench_json(*result_);
      j["environment"] = environment_json(*env_);
      j["command"] = argv_;
      files.push_back({v_.report.json_path, j.dump(2) + "\n"});
    }
    if (!v_.report.csv_path.empty()) files.push_back({v_.report.csv_path, bench_csv(*result_)});
    return files;
  }

 private:
  const ValidBench& v_;
  const std::vector<std::string>& argv_;
  std::optional<EnvironmentInfo> env_;
  std::optional<BenchResult> result_;
};

}  // namespace

CLI::App* add_bench_command(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<BenchOptions>();
  opts->session.impl = "both";
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Time the direct and stock paths with the upstream method (CUDA graphs of K ops, R "
      "replays, median of M repeats of the max over ranks); needs one GPU per rank");
  add_world_option(sub, opts->world);
  add_geometry_options(sub, opts->geometry);
  add_session_options(sub, opts->session);
  sub->add_option("--tokens", opts->tokens,
                  fmt::format("Token counts, comma-separated (default {})", kDefaultBenchTokens));
  sub->add_option("--ops-per-graph", opts->ops_per_graph,
                  fmt::format("K: ops captured in one graph (default {})", kDefaultOpsPerGraph));
  sub->add_option(
      "--repeats", opts->repeats,
      fmt::format("M: timed repeats, median reported (default {})", kDefaultBenchRepeats));
  sub->add_option("--replays", opts->replays,
                  fmt::format("R: graph replays per repeat (default {})", kDefaultBenchReplays));
  sub->add_option(
      "--warmup", opts->warmup_replays,
      fmt::format("Graph replays before timing (default {})", kDefaultBenchWarmupReplays));
  sub->add_flag("--allow-shared-gpu", opts->allow_shared_gpu,
                "Run even when ranks share a GPU; every number is labelled not meaningful");
  add_report_options(sub, opts->report,
                     {.json = "the timing table, GPUs, driver, CUDA and NCCL versions",
                      .csv = true,
                      .verbose = false});
  sub->callback([opts, &ctx] {
    ctx.action = [opts, &ctx] {
      const ValidBench v = validate_bench_options(*opts);
      return execute_command<BenchCommand>(v.report.verbosity(), v, ctx.argv);
    };
  });
  return sub;
}

}  // namespace dcp
