// `dcp-check stress`: draw random scenarios from the whole axis space
// (random_case(seed, index)) and run them until a duration or iteration count
// is reached, or a failure is found. Every failure prints its replay line at
// once, is shrunk to a minimal failing case, and can be saved as a bundle.
// Scenario k of seed S is the same case on every machine, so `--seed S` reruns
// a whole stress run and the replay token reruns one scenario alone.
#include <fmt/format.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <random>

#include "cli.h"
#include "cli_common.h"
#include "command_lifecycle.h"
#include "duration.h"
#include "errors.h"
#include "failure_bundle.h"
#include "options.h"
#include "plan.h"
#include "random_case.h"
#include "run_report_command.h"
#include "selftest.h"
#include "shrink_runner.h"

namespace dcp {
namespace {

constexpr const char* kStressSuite = "stress";
constexpr double kDefaultDurationS = 60;
constexpr int kDefaultShrinkAttempts = 200;
constexpr const char* kDefaultShrinkTime = "5m";
constexpr int64_t kMaxIterations = int64_t{1} << 40;

struct StressOptions {
  int world = kMinWorld;
  GeometryOptions geometry;
  SessionOptions session;
  std::string duration;  // "" : not given
  std::optional<int64_t> iterations;
  std::optional<std::string> seed;  // absent: drawn from std::random_device
  bool keep_going = false;
  bool no_shrink = false;
  int shrink_attempts = kDefaultShrinkAttempts;
  std::string shrink_time = kDefaultShrinkTime;
  std::string save_failures;
  bool check_determinism = false;
  std::string mstress = "drawn";  // drawn | all | off
  ReportOptions report;  // --json, -q, -v (no --junit: failures only)
  std::string shard;     // K/N ("" : from the scheduler's variables, else 0/1)
};

struct ValidStress {
  SessionConfig config;
  uint64_t seed = 0;       // this shard's: shard_seed(base_seed, shard)
  uint64_t base_seed = 0;  // --seed (or drawn)
  Shard shard;
  bool seed_given = false;
  double duration_s = 0;   // 0: no time limit
  int64_t iterations = 0;  // 0: no count limit
  bool keep_going = false;
  bool shrink = true;
  ShrinkLimits shrink_limits;
  std::string save_dir;  // "" : no bundles
  // Memory stress: as random_case draws it (5%), on every eager or pipelined
  // scenario, or on none.
  enum class MemoryStressDraw { kDrawn, kAll, kOff } mstress = MemoryStressDraw::kDrawn;
  ReportOptions report;
};

uint64_t random_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

ValidStress validate_stress_options(const StressOptions& o) {
  ValidStress v;
  validate_world(o.world);
  const Geometry g = resolve_geometry(o.geometry, o.world);
  validate_report_options(o.report);
  v.config = make_session_config(o.session, o.report, o.world, g);
  v.config.check_determinism = o.check_determinism;
  if (o.mstress == "all") {
    v.mstress = ValidStress::MemoryStressDraw::kAll;
  } else if (o.mstress == "off") {
    v.mstress = ValidStress::MemoryStressDraw::kOff;
  } else if (o.mstress != "drawn") {
    throw UsageError(fmt::format("--mstress {}: must be drawn, all or off", o.mstress));
  }
  if (o.iterations) {
    if (*o.iterations < 1 || *o.iterations > kMaxIterations) {
      throw UsageError(
          fmt::format("--iterations {}: must be between 1 and {}", *o.iterations, kMaxIterations));
    }
    v.iterations = *o.iterations;
  }
  if (!o.duration.empty()) v.duration_s = parse_duration_seconds(o.duration);
  // Neither limit: a bounded default, never an endless run by accident.
  if (v.iterations == 0 && v.duration_s == 0) v.duration_s = kDefaultDurationS;
  v.seed_given = o.seed.has_value();
  v.base_seed = o.seed ? parse_seed(*o.seed) : random_seed();
  v.shard = resolve_shard(o.shard);
  if (v.shard.sharded() && !o.seed) {
    // A random base seed per shard would make the shards unrelated (and unmergeable).
    throw UsageError(fmt::format("shard {} ({}) needs --seed: every shard derives its seed from "
                                 "the same base seed",
                                 v.shard.text(), v.shard.source));
  }
  touch_shard_status_file();
  v.seed = shard_seed(v.base_seed, v.shard);
  v.keep_going = o.keep_going;
  v.shrink = !o.no_shrink;
  if (o.shrink_attempts < 1 || o.shrink_attempts > 100000) {
    throw UsageError(
        fmt::format("--shrink-attempts {}: must be between 1 and 100000", o.shrink_attempts));
  }
  v.shrink_limits.max_attempts = o.shrink_attempts;
  v.shrink_limits.max_seconds = parse_duration_seconds(o.shrink_time);
  v.save_dir = o.save_failures;
  if (!v.save_dir.empty()) prepare_failure_dir(v.save_dir);
  v.report = o.report;
  return v;
}

std::string backend_name(const SessionConfig& c) {
  return c.backend == BackendKind::kHost ? "host" : "gpu";
}
std::string kernel_name(const SessionConfig& c) {
  return kernels_text(c.kernel, c.against ? &*c.against : nullptr);
}

// One failure as the report and the bundle see it.
struct StressFailure {
  uint64_t index = 0;
  Case scenario;
  CaseResult result;
  std::optional<ShrinkOutcome> shrunk;
  std::string bundle_path;
};

class StressCommand : public RunReportCommand {
 public:
  StressCommand(const ValidStress& v, const std::vector<std::string>& argv)
      : RunReportCommand("stress", argv, v.config, v.report), v_(v), session_(v.config) {
    report_.suite = kStressSuite;
    report_.seed = v.seed;
    if (v.shard.sharded()) {
      ReportShard s;
      s.index = v.shard.index;
      s.count = v.shard.count;
      s.source = v.shard.source;
      s.base_seed = v.base_seed;
      report_.shard = s;
    }
  }

  void run(CommandLifecycle& life) override {
    print_header(life.term());
    const auto stop = [&] {
      if (life.interrupted() != 0) return true;
      if (v_.iterations > 0 && num_scenarios_ >= v_.iterations) return true;
      if (v_.duration_s > 0 && life.elapsed_s() >= v_.duration_s) return true;
      return !failures_.empty() && !v_.keep_going;
    };
    // The next scenarios are sent ahead, so no worker idles between them; if
    // the run stops first, they are finished and dropped at shut-down.
    std::deque<Case> upcoming;
    for (uint64_t index = 0; !stop(); ++index) {
      if (upcoming.empty()) upcoming.push_back(scenario(index));
      const Case c = upcoming.front();
      upcoming.pop_front();
      while (upcoming.size() < kScenariosAhead &&
             (v_.iterations == 0 ||
              static_cast<int64_t>(index + 1 + upcoming.size()) < v_.iterations)) {
        upcoming.push_back(scenario(index + 1 + upcoming.size()));
      }
      const auto t0 = Clock::now();
      const double startup_before = session_.startup_s();
      CaseResult r = session_.run(c, kStressSuite, {upcoming.begin(), upcoming.end()});
      run_s_ += std::chrono::duration<double>(Clock::now() - t0).count() -
                (session_.startup_s() - startup_before);
      report_.phases.add(r);
      // Workers share our process group: Ctrl-C kills them too. A case that
      // errored while we were being interrupted did not fail.
      if (life.interrupted() != 0 && r.status == CaseStatus::kError) break;
      ++num_scenarios_;
      if (r.status == CaseStatus::kSkipped) {
        if (num_skipped_++ == 0) first_skip_ = r.message;
      }
      if (r.status == CaseStatus::kPass || r.status == CaseStatus::kFail) {
        num_calls_ += static_cast<int64_t>(num_ops(c)) * (v_.config.check_determinism ? 2 : 1);
      }
      const bool failed = r.status == CaseStatus::kFail || r.status == CaseStatus::kError;
      if (failed) handle_failure(life, index, c, std::move(r));
      life.term().status(status_line(life.elapsed_s()), /*now=*/failed);
    }
    // Now, so that -v and the report say what it cost (scenarios sent ahead
    // finish first); not part of calls/s.
    teardown_ = session_.shut_down(&teardown_s_);
  }

  void record(const Outcome& o) override {
    RunReportCommand::record(o);
    if (session_.environment() != nullptr) {
      report_.environment = *session_.environment();
      report_.environment->teardown = teardown_;
      report_.environment->teardown_s = teardown_s_;
    }
  }

  // The scenario replay lines (the shrunk one where shrinking helped), then
  // the verdict with the totals.
  void summary(TerminalReporter& term, const Outcome& o) const override {
    term.detail(fmt::format(
        "session start-up {:.2f} s over {} session{}, shut-down {:.2f} s (workers {:.2f}{}, MPS "
        "{:.2f}, files {:.2f}); neither is in calls/s",
        session_.startup_s(), session_.num_started(), session_.num_started() == 1 ? "" : "s",
        teardown_s_, teardown_.workers_s,
        teardown_.workers_killed > 0 ? fmt::format(", {} killed", teardown_.workers_killed) : "",
        teardown_.mps_s, teardown_.rest_s));
    term.detail(report_.phases.line());
    if (const std::string check = report_.phases.check_line(); !check.empty()) term.info(check);
    if (num_skipped_ > 0) {
      // Drawn but not runnable here (e.g. SM pressure on the host): never a pass.
      term.note(fmt::format("{} scenario{} skipped, the first: {}", num_skipped_,
                            num_skipped_ == 1 ? "" : "s", first_skip_));
    }
    if (!failures_.empty()) term.note("replay:");
    for (const StressFailure& f : failures_) {
      const bool small = f.shrunk && f.shrunk->num_steps > 0;
      term.note("  " + (small ? replay_for(f.shrunk->minimal) : f.result.replay));
    }
    term.verdict(o.exit_code,
                 fmt::format("{} scenarios, {} calls in {} ({:.0f} calls/s), {} failure{}, seed "
                             "0x{:016x}",
                             num_scenarios_, num_calls_, format_elapsed_s(o.wall_s),
                             calls_per_s(), failures_.size(), failures_.size() == 1 ? "" : "s",
                             v_.seed));
  }

 private:
  using Clock = std::chrono::steady_clock;
  // Two: a scenario's check may outlast the whole next scenario.
  static constexpr size_t kScenariosAhead = 2;
  ShutdownTimes teardown_;
  double teardown_s_ = 0;

  Case scenario(uint64_t index) const {
    Case c = random_case(v_.seed, index, v_.config.world, v_.config.geometry);
    if (v_.mstress == ValidStress::MemoryStressDraw::kAll) c.mstress = pressure_allowed(c.mode);
    if (v_.mstress == ValidStress::MemoryStressDraw::kOff) c.mstress = false;
    return c;
  }

  void print_header(TerminalReporter& term) const {
    const Geometry& g = v_.config.geometry;
    std::string limits;
    if (v_.duration_s > 0) limits = "for " + format_elapsed_s(v_.duration_s);
    if (v_.iterations > 0) {
      limits += fmt::format("{}{} scenarios", limits.empty() ? "" : " or ", v_.iterations);
    }
    term.begin(fmt::format("dcp-check stress: world {} ({}), geometry {}, backend {}, {}, {}{}{}",
                           v_.config.world, describe_groups(v_.config.world),
                           g.name.empty() ? "custom" : g.name, backend_name(v_.config),
                           kernel_name(v_.config), limits, v_.keep_going ? ", --keep-going" : "",
                           v_.config.check_determinism ? ", --check-determinism" : ""),
               0);
    // Always printed, quiet or not: without it a failure-free run cannot be redone.
    term.note(fmt::format("seed 0x{:016x}{}", v_.seed,
                          v_.seed_given ? "" : " (random; rerun this run with --seed)"));
    if (v_.shard.sharded()) {
      // Its own stream: `--seed <this seed>` alone, or the base seed with the same --shard.
      term.note(fmt::format("shard {}{}: seed derived from base seed 0x{:016x}", v_.shard.text(),
                            v_.shard.source == "--shard" ? "" : " from " + v_.shard.source,
                            v_.base_seed));
    }
    if (v_.config.mutant != 0) {
      std::string name = std::to_string(v_.config.mutant);
      for (const MutantInfo& m : mutants_for(v_.config)) {
        if (m.id == v_.config.mutant) name = m.name;
      }
      term.note("TEST ONLY: running a deliberately broken kernel variant (--mutant " + name + ")");
    }
  }

  // Printed at once, replay line first (usable before shrinking ends), then
  // shrunk and saved; recorded as one of the report's cases.
  void handle_failure(CommandLifecycle& life, uint64_t index, const Case& c, CaseResult r) {
    StressFailure f;
    f.index = index;
    f.scenario = c;
    life.term().failure(fmt::format("scenario #{}", index), r);
    if (v_.shrink && is_kernel_failure(r)) {
      ShrinkLimits limits = v_.shrink_limits;
      limits.cancelled = [&life] { return life.interrupted() != 0; };
      f.shrunk = shrink_and_print(session_, c, r, limits, life.term());
    }
    f.result = std::move(r);
    if (!v_.save_dir.empty()) {
      f.bundle_path = write_failure_bundle(v_.save_dir, make_bundle(f));
      life.term().note("  saved " + f.bundle_path);
    }
    report_.cases.push_back(f.result);
    failures_.push_back(std::move(f));
  }

  FailureBundle make_bundle(const StressFailure& f) const {
    FailureBundle b;
    b.scenario = f.scenario;
    b.result = f.result;
    b.world = v_.config.world;
    b.backend = backend_name(v_.config);
    b.impl = kernel_name(v_.config);
    b.replay = f.result.replay;
    b.stress_seed = v_.seed;
    b.stress_index = f.index;
    if (f.shrunk) {
      b.shrunk = ShrunkCase{f.shrunk->minimal, replay_for(f.shrunk->minimal), f.shrunk->num_steps,
                            f.shrunk->num_attempts, f.shrunk->reached_fixpoint};
    }
    b.environment = session_.environment();
    return b;
  }

  double calls_per_s() const { return run_s_ > 0 ? static_cast<double>(num_calls_) / run_s_ : 0; }

  std::string status_line(double elapsed_s) const {
    return fmt::format("[stress {}] {} scenarios, {} calls ({:.0f} calls/s), {} failure{}",
                       format_elapsed_s(elapsed_s), num_scenarios_, num_calls_, calls_per_s(),
                       failures_.size(), failures_.size() == 1 ? "" : "s");
  }

  // The run report ("cases": the failing scenarios only) plus the totals.
  nlohmann::ordered_json json() const override {
    nlohmann::ordered_json j = RunReportCommand::json();
    nlohmann::ordered_json failures = nlohmann::ordered_json::array();
    for (const StressFailure& f : failures_) {
      nlohmann::ordered_json fj = {{"index", f.index},
                                   {"case_id", f.result.case_id},
                                   {"replay", f.result.replay},
                                   {"bundle", f.bundle_path}};
      if (f.shrunk) {
        fj["shrunk"] = {{"case_id", format_case_id(f.shrunk->minimal)},
                        {"replay", replay_for(f.shrunk->minimal)},
                        {"num_steps", f.shrunk->num_steps},
                        {"num_attempts", f.shrunk->num_attempts},
                        {"reached_fixpoint", f.shrunk->reached_fixpoint}};
      }
      failures.push_back(std::move(fj));
    }
    j["stress"] = {{"seed", fmt::format("0x{:016x}", v_.seed)},
                   {"seed_given", v_.seed_given},
                   {"duration_s", v_.duration_s},
                   {"iterations", v_.iterations},
                   {"num_scenarios", num_scenarios_},
                   {"num_calls", num_calls_},
                   {"num_skipped", num_skipped_},
                   {"calls_per_s", calls_per_s()},
                   {"run_s", run_s_},
                   {"startup_s", session_.startup_s()},
                   {"num_sessions", session_.num_started()},
                   {"keep_going", v_.keep_going},
                   {"base_seed", fmt::format("0x{:016x}", v_.base_seed)},
                   {"failures", failures}};
    // A test-only broken variant ran: a reader must never take this for the real kernel.
    if (v_.config.mutant != 0) j["stress"]["mutant"] = v_.config.mutant;
    return j;
  }

  const ValidStress& v_;
  RestartingSession session_;
  std::vector<StressFailure> failures_;
  int64_t num_scenarios_ = 0;
  int64_t num_skipped_ = 0;  // of num_scenarios_: drawn, not runnable here (no calls counted)
  std::string first_skip_;
  int64_t num_calls_ = 0;
  double run_s_ = 0;  // time running scenarios: calls/s excludes session start-up and shrinking
};

}  // namespace

CLI::App* add_stress_command(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<StressOptions>();
  CLI::App* sub = app.add_subcommand(
      "stress",
      "Run random scenarios from the whole axis space until a time or count limit or a failure; "
      "print a replay line per failure and shrink it to a minimal failing case");
  add_world_option(sub, opts->world);
  add_geometry_options(sub, opts->geometry);
  add_session_options(sub, opts->session);
  sub->add_option("-d,--duration", opts->duration,
                  "Stop after this long: 90s, 10m, 1h, 1h30m or plain seconds (default 60s when "
                  "--iterations is not given either)");
  sub->add_option_function<int64_t>(
      "-n,--iterations", [o = opts.get()](const int64_t& n) { o->iterations = n; },
      "Stop after N scenarios (with --duration: whichever comes first)");
  sub->add_option_function<std::string>(
      "--seed", [o = opts.get()](const std::string& s) { o->seed = s; },
      "Stress seed (decimal or 0x-hex; default: random, printed)");
  sub->add_flag("-k,--keep-going", opts->keep_going, "Do not stop at the first failure");
  sub->add_flag("--no-shrink", opts->no_shrink, "Do not shrink failures");
  sub->add_option(
      "--shrink-attempts", opts->shrink_attempts,
      fmt::format("Most candidates run per shrink (default {})", kDefaultShrinkAttempts));
  sub->add_option("--shrink-time", opts->shrink_time,
                  fmt::format("Most time per shrink (default {})", kDefaultShrinkTime));
  sub->add_option("--save-failures", opts->save_failures,
                  "Write one JSON bundle per failure into this directory (created if needed)");
  sub->add_flag("--check-determinism", opts->check_determinism,
                "Run each scenario twice; different output bits on any rank is a failure");
  sub->add_option("--mstress", opts->mstress,
                  "Memory stress: drawn (on 5% of eager or pipelined scenarios), all (on every "
                  "one), off (GPU only; replay lines carry it in the case id)")
      ->capture_default_str();
  add_report_options(
      sub, opts->report,
      {.json = "the failing scenarios and a \"stress\" summary; docs/report-format.md"});
  add_shard_option(sub, opts->shard);
  sub->callback([opts, &ctx] {
    ctx.action = [opts, &ctx] {
      const ValidStress v = validate_stress_options(*opts);
      return execute_command<StressCommand>(v.report.verbosity(), v, ctx.argv);
    };
  });
  return sub;
}

}  // namespace dcp
