// `dcp-check selftest`: runs a suite on the correct kernel and on every mutant
// of the chosen backend, prints which mutants the suite catches (and which the
// upstream test's profile would miss), exits 0 only when every mutant that can
// be exposed here is caught. Mutants are reachable from this command only.
#include <fmt/format.h>

#include <memory>
#include <stdexcept>

#include "cli.h"
#include "command_lifecycle.h"
#include "errors.h"
#include "options.h"
#include "report_json.h"
#include "selftest.h"
#include "run_target.h"
#include "session.h"
#include "suites.h"
#include "version_info.h"

namespace dcp {
namespace {

// Hanging mutants cost one deadline each: a short default keeps the whole
// table within minutes. The correct kernel runs under the same deadline.
constexpr double kDefaultSelftestTimeoutS = 5;

struct SelftestOptions {
  int world = kMinWorld;
  GeometryOptions geometry;
  SelectionOptions selection;
  SessionOptions session;  // backend, timeout, mps (impl is always direct)
  std::string mutants;     // comma-separated names or ids; "" = all
  bool fast = false;
  bool no_upstream = false;
  bool no_memory_stress = false;  // the same cases with -mstress removed
  ReportOptions report;  // --json, -q, -v
  std::string shard;     // K/N: this part of the mutants ("" : scheduler's variables, else 0/1)
};

class RealSelftestSession : public SelftestSession {
 public:
  explicit RealSelftestSession(const SessionConfig& config) : session_(config) {}
  CaseResult run_case(const Case& c, const std::string& suite) override {
    return session_.run_case(c, suite);
  }
  bool dead() const override { return session_.dead(); }
  const EnvironmentInfo& environment() const override { return session_.environment(); }

 private:
  Session session_;
};

std::vector<Case> suite_cases(const std::string& suite, const SuiteOptions& suite_opts,
                              const CaseSelection& selection, bool no_memory_stress) {
  std::vector<Case> cases;
  try {
    for (Case& c : build_suite(suite, suite_opts)) {
      if (no_memory_stress) c.mstress = false;
      if (selection.matches(format_case_id(c))) cases.push_back(std::move(c));
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("--suite {}: {}", suite, e.what()));
  }
  return cases;
}

// The command line that reruns this selftest configuration; the table appends
// " --mutants NAME --fast --no-upstream" to rerun one mutant.
std::string rerun_prefix(const SelftestOptions& o, const SessionConfig& config) {
  std::string cmd = fmt::format("dcp-check selftest --backend {} --world {} --geometry {}",
                                o.session.backend, o.world, o.geometry.name);
  if (o.geometry.heads_per_rank)
    cmd += fmt::format(" --heads-per-rank {}", *o.geometry.heads_per_rank);
  if (o.geometry.head_dim) cmd += fmt::format(" --head-dim {}", *o.geometry.head_dim);
  if (o.geometry.max_tokens) cmd += fmt::format(" --max-tokens {}", *o.geometry.max_tokens);
  cmd += fmt::format(" --suite {} --seed {} --timeout {:g}", o.selection.suite, o.selection.seed,
                     config.timeout_s);
  if (o.session.mps != "auto") cmd += " --mps " + o.session.mps;
  if (o.no_memory_stress) cmd += " --no-memory-stress";
  if (!o.session.check.empty()) cmd += " --check " + o.session.check;
  if (config.kernel.spec != kDefaultKernel) cmd += " --kernel " + config.kernel.spec;
  return cmd;
}

struct ValidSelftest {
  SessionConfig base;  // every session's config but the mutant, profile and geometry
  SelftestPlan plan;
  Shard shard;  // plan.mutants is this shard's part
  size_t all_mutants = 0;  // before the split
  std::string rerun_prefix;
};

ValidSelftest validate_selftest_options(const SelftestOptions& o) {
  validate_world(o.world);
  const Geometry geometry = resolve_geometry(o.geometry, o.world);
  const CaseSelection selection = validate_selection(o.selection);
  validate_report_options(o.report);
  ValidSelftest v;
  v.base = make_session_config(o.session, o.report, o.world, geometry);
  SelftestPlan& plan = v.plan;
  plan.suite = selection.suite;
  plan.fast = o.fast;
  plan.mutants = select_mutants(mutants_for(v.base), o.mutants);
  if (plan.mutants.empty()) {
    throw UsageError(fmt::format("kernel '{}' declares no mutants: selftest has nothing to prove",
                                 v.base.kernel.name));
  }
  v.shard = resolve_shard(o.shard);
  touch_shard_status_file();
  v.all_mutants = plan.mutants.size();
  plan.mutants = take_shard(plan.mutants, v.shard);
  if (plan.mutants.empty()) {
    throw UsageError(fmt::format("{} {}: no mutant left in this shard ({} mutants in all)",
                                 v.shard.source, v.shard.text(), v.all_mutants));
  }
  // The suite is generated for the kernel's declaration (one GPU per rank
  // assumed); the upstream column stays the upstream test's own cases.
  const SuiteOptions suite_opts{
      .world = o.world, .geometry = geometry, .base_seed = selection.seed};
  SuiteOptions target_opts = suite_opts;
  target_opts.skip_reason = skip_reason_fn(run_target(v.base));
  plan.cases = suite_cases(selection.suite, target_opts, selection, o.no_memory_stress);
  if (plan.cases.empty()) {
    throw UsageError(fmt::format("--filter '{}': matches no case of suite {}", selection.filter,
                                 selection.suite));
  }
  // The filter applies to both columns: rerunning one case of the main suite
  // usually leaves no upstream case, and then the column is simply off.
  if (!o.no_upstream) plan.upstream_cases = suite_cases("upstream", suite_opts, selection, false);
  v.rerun_prefix = rerun_prefix(o, v.base);
  return v;
}

class SelftestCommand : public CommandBody {
 public:
  SelftestCommand(const SelftestOptions& o, const ValidSelftest& v) : o_(o), v_(v) {}

  void run(CommandLifecycle& life) override {
    const SelftestPlan& plan = v_.plan;
    life.term().begin(
        fmt::format("dcp-check selftest: backend {}, world {}, geometry {}, suite {} ({} cases), "
                    "{} mutants, upstream profile {}, deadline {:g} s{}",
                    o_.session.backend, o_.world, o_.geometry.name, plan.suite,
                    plan.cases.size(), plan.mutants.size(),
                    plan.upstream_cases.empty()
                        ? std::string("off")
                        : fmt::format("{} cases", plan.upstream_cases.size()),
                    v_.base.timeout_s, plan.fast ? ", --fast" : ""),
        0);
    if (v_.shard.sharded()) {
      life.term().info(fmt::format("shard {}{}: {} of the {} mutants", v_.shard.text(),
                                   v_.shard.source == "--shard" ? "" : " from " + v_.shard.source,
                                   plan.mutants.size(), v_.all_mutants));
    }
    // Ctrl-C reaches the workers too (same process group): stop between cases
    // instead of counting the resulting errors as detections.
    SelftestPlan interruptible = plan;
    interruptible.interrupted = [&life] { return life.interrupted(); };
    const SessionConfig& base = v_.base;
    SessionFactory factory = [&base](int mutant, const CheckProfile& profile,
                                     const Geometry& geometry) {
      SessionConfig config = base;
      config.geometry = geometry;
      config.mutant = mutant;
      config.profile = profile;  // strict or upstream; where the check runs is the command's
      config.profile.on_device = base.profile.on_device;
      config.profile.audit_one_in = base.profile.audit_one_in;
      return std::unique_ptr<SelftestSession>(std::make_unique<RealSelftestSession>(config));
    };
    run_selftest(interruptible, factory, report_,
                 [&life](const std::string& line) { life.term().info(line); });
  }

  int exit_code(int interrupted_by) const override {
    Findings f = selftest_findings(report_);
    if (f.interrupted_by == 0) f.interrupted_by = interrupted_by;
    return dcp::exit_code(f);
  }

  void record(const Outcome& o) override {
    if (report_.interrupted_by == 0) report_.interrupted_by = o.interrupted_by;
    if (o.aborted) report_.elapsed_s = o.wall_s;  // run_selftest did not get to set it
    exit_code_ = o.exit_code;
  }

  void summary(TerminalReporter& term, const Outcome& o) const override {
    if (o.aborted) {
      term.verdict(o.exit_code, fmt::format("selftest: stopped after {} of {} mutants ({:.1f} s)",
                                            report_.mutants.size(), v_.plan.mutants.size(),
                                            o.wall_s));
      return;
    }
    term.block(format_selftest_table(report_, v_.rerun_prefix));
    term.verdict(o.exit_code, selftest_verdict(report_));
  }

  std::vector<ReportFile> report_files() const override {
    if (o_.report.json_path.empty()) return {};
    nlohmann::json j = report_;
    j["world"] = o_.world;
    j["geometry"] = o_.geometry.name;
    j["timeout_s"] = v_.base.timeout_s;
    j["tool"] = version_json(version_info());
    j["kernel"] = {{"name", v_.base.kernel.name}, {"sha256", v_.base.kernel.sha256}};
    j["exit_code"] = exit_code_;  // the process's, also when the run was cut short
    if (v_.shard.sharded()) {
      j["shard"] = {{"index", v_.shard.index}, {"count", v_.shard.count},
                    {"source", v_.shard.source}};
    }
    if (report_.environment) j["environment"] = environment_to_json(*report_.environment);
    return {{o_.report.json_path, j.dump(2) + "\n"}};
  }

 private:
  const SelftestOptions& o_;
  const ValidSelftest& v_;
  SelftestReport report_;
  int exit_code_ = 0;
};

}  // namespace

CLI::App* add_selftest_command(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<SelftestOptions>();
  opts->session.timeout_s = kDefaultSelftestTimeoutS;
  CLI::App* cmd = app.add_subcommand(
      "selftest",
      "Prove the checker can fail: run a suite on the correct kernel (must pass) and on every "
      "deliberately broken kernel variant (each must be caught); exit 1 if any survives");
  add_world_option(cmd, opts->world);
  add_geometry_options(cmd, opts->geometry);
  add_selection_options(cmd, opts->selection);
  cmd->add_option("-b,--backend", opts->session.backend,
                  "gpu (default; kernels/mutants.h) | host (the host model's protocol mutants)");
  cmd->add_option("-t,--timeout", opts->session.timeout_s,
                  fmt::format("Per-call deadline in seconds (default {:g}: hanging mutants cost "
                              "one deadline each)",
                              kDefaultSelftestTimeoutS));
  cmd->add_option("--mps", opts->session.mps,
                  "auto (default) | on | off: CUDA MPS when ranks share a GPU");
  cmd->add_option("--kernel", opts->session.kernel,
                  "direct (default) | PATH of a plugin that declares mutants (docs/plugins.md)");
  cmd->add_option("--check", opts->session.check,
                  "gpu (default on the GPU backend) | cpu: which checker judges the calls");
  cmd->add_option("--mutants", opts->mutants,
                  "Only these mutants: comma-separated names or ids (default: all)");
  cmd->add_flag("--fast", opts->fast,
                "Stop each mutant at its first detection (no per-mutant case count)");
  cmd->add_flag("--no-upstream", opts->no_upstream,
                "Skip the upstream-profile column (the upstream suite at 3e-2 vs fp32)");
  cmd->add_flag("--no-memory-stress", opts->no_memory_stress,
                "Run the suite's cases without their memory stress (-mstress removed): what a "
                "memory-ordering mutant does without the memory-stress family");
  add_report_options(cmd, opts->report, {.json = "the selftest table and verdicts"});
  add_shard_option(cmd, opts->shard);
  cmd->callback([opts, &ctx] {
    ctx.action = [opts] {
      const ValidSelftest v = validate_selftest_options(*opts);
      return execute_command<SelftestCommand>(opts->report.verbosity(), *opts, v);
    };
  });
  return cmd;
}

}  // namespace dcp
