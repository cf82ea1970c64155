// `dcp-check stress`: draw random scenarios from the whole axis space
// (random_case(seed, index)) and run them until a duration or iteration count
// is reached, or a failure is found. Every failure prints its replay line at
// once, is shrunk to a minimal failing case, and can be saved as a bundle.
// Scenario k of seed S is the same case on every machine, so `--seed S` reruns
// a whole stress run and the replay token reruns one scenario alone.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>

#include "cli.h"
#include "cli_common.h"
#include "duration.h"
#include "errors.h"
#include "failure_bundle.h"
#include "options.h"
#include "plan.h"
#include "random_case.h"
#include "replay.h"
#include "report_file.h"
#include "report_json.h"
#include "report_terminal.h"
#include "selftest.h"
#include "shrink_runner.h"

namespace dcp {
namespace {

constexpr const char* kStressSuite = "stress";
constexpr double kDefaultDurationS = 60;
constexpr double kPlainStatusEveryS = 10;  // not a terminal: one line this often
constexpr double kTtyStatusEveryS = 0.25;  // terminal: redraw at most this often
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
  ReportOptions report;  // --json, -q, -v (no --junit: failures only)
};

struct ValidStress {
  SessionConfig config;
  uint64_t seed = 0;
  bool seed_given = false;
  double duration_s = 0;   // 0: no time limit
  int64_t iterations = 0;  // 0: no count limit
  bool keep_going = false;
  bool shrink = true;
  ShrinkLimits shrink_limits;
  std::string save_dir;  // "" : no bundles
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
  v.seed = o.seed ? parse_seed(*o.seed) : random_seed();
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

class StressCommand {
 public:
  StressCommand(const ValidStress& v, const std::vector<std::string>& argv)
      : v_(v),
        style_(detect_terminal_style(v.report.verbosity())),
        session_(v.config),
        report_(make_run_report("stress", argv, v.config)) {
    report_.suite = kStressSuite;
    report_.seed = v.seed;
  }

  int execute() {
    print_header();
    try {
      loop();
    } catch (const std::exception& e) {
      finish_after_exception(exit_code(findings_of(e)));
      throw;
    }
    clear_status();
    const int code = exit_code(findings_of(failure_results(), interrupts_.signal_received()));
    finish(code, /*print=*/true);
    return code;
  }

 private:
  using Clock = std::chrono::steady_clock;

  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  void print_header() {
    const Geometry& g = v_.config.geometry;
    std::string limits;
    if (v_.duration_s > 0) limits = "for " + format_elapsed_s(v_.duration_s);
    if (v_.iterations > 0) {
      limits += fmt::format("{}{} scenarios", limits.empty() ? "" : " or ", v_.iterations);
    }
    say(fmt::format("dcp-check stress: world {} ({}), geometry {}, backend {}, {}, {}{}{}",
                    v_.config.world, describe_groups(v_.config.world),
                    g.name.empty() ? "custom" : g.name, backend_name(v_.config),
                    kernel_name(v_.config), limits, v_.keep_going ? ", --keep-going" : "",
                    v_.config.check_determinism ? ", --check-determinism" : ""));
    // Always printed, quiet or not: without it a failure-free run cannot be redone.
    std::printf("seed 0x%016llx%s\n", static_cast<unsigned long long>(v_.seed),
                v_.seed_given ? "" : " (random; rerun this run with --seed)");
    if (v_.config.mutant != 0) {
      std::string name = std::to_string(v_.config.mutant);
      for (const MutantInfo& m : mutants_for(v_.config)) {
        if (m.id == v_.config.mutant) name = m.name;
      }
      std::printf("TEST ONLY: running a deliberately broken kernel variant (--mutant %s)\n",
                  name.c_str());
    }
    std::fflush(stdout);
  }

  bool should_stop() const {
    if (interrupts_.signal_received() != 0) return true;
    if (v_.iterations > 0 && num_scenarios_ >= v_.iterations) return true;
    if (v_.duration_s > 0 && elapsed_s() >= v_.duration_s) return true;
    return !failures_.empty() && !v_.keep_going;
  }

  void loop() {
    for (uint64_t index = 0; !should_stop(); ++index) {
      const Case c = random_case(v_.seed, index, v_.config.world, v_.config.geometry);
      const auto t0 = Clock::now();
      const double startup_before = session_.startup_s();
      CaseResult r = session_.run(c, kStressSuite);
      run_s_ += std::chrono::duration<double>(Clock::now() - t0).count() -
                (session_.startup_s() - startup_before);
      report_.phases.add(r);
      // Workers share our process group: Ctrl-C kills them too. A case that
      // errored while we were being interrupted did not fail.
      if (interrupts_.signal_received() != 0 && r.status == CaseStatus::kError) break;
      ++num_scenarios_;
      if (r.status == CaseStatus::kPass || r.status == CaseStatus::kFail) {
        num_calls_ += static_cast<int64_t>(num_ops(c)) * (v_.config.check_determinism ? 2 : 1);
      }
      if (r.status == CaseStatus::kPass || r.status == CaseStatus::kSkipped) {
        update_status(false);
        continue;
      }
      handle_failure(index, c, std::move(r));
      update_status(true);
    }
  }

  void handle_failure(uint64_t index, const Case& c, CaseResult r) {
    clear_status();
    StressFailure f;
    f.index = index;
    f.scenario = c;
    std::printf("%s scenario #%llu (%s): %s\n", paint_bad(failure_word(r)).c_str(),
                static_cast<unsigned long long>(index), failure_type(r).c_str(), r.message.c_str());
    print_first_mismatches(r);
    std::printf("  %s\n", r.replay.c_str());  // before shrinking: usable right away
    std::fflush(stdout);
    if (v_.shrink && is_kernel_failure(r)) {
      ShrinkLimits limits = v_.shrink_limits;
      limits.cancelled = [this] { return interrupts_.signal_received() != 0; };
      f.shrunk = shrink_and_print(session_, c, r, limits, stdout, v_.report.verbosity() < 0);
    }
    f.result = std::move(r);
    if (!v_.save_dir.empty()) {
      f.bundle_path = write_failure_bundle(v_.save_dir, make_bundle(f));
      std::printf("  saved %s\n", f.bundle_path.c_str());
    }
    std::fflush(stdout);
    failures_.push_back(std::move(f));
  }

  void print_first_mismatches(const CaseResult& r) const {
    int shown = 0;
    for (const RankCaseResult& k : r.ranks) {
      if (!k.error.empty() && shown < 4) {
        std::printf("  rank %d: %s\n", k.rank, k.error.c_str());
        ++shown;
      }
      for (const Mismatch& m : k.first_mismatches) {
        if (shown++ >= 4) return;
        std::printf("  %s\n", format_mismatch(m).c_str());
      }
    }
  }

  static std::string failure_word(const CaseResult& r) {
    return r.status == CaseStatus::kFail ? "FAIL" : "ERROR";
  }
  std::string paint_bad(const std::string& word) const {
    return style_.color ? "\033[1;31m" + word + "\033[0m" : word;
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
      b.shrunk = ShrunkCase{
          f.shrunk->minimal, replay_command(v_.config, v_.config.world, f.shrunk->minimal),
          f.shrunk->num_steps, f.shrunk->num_attempts, f.shrunk->reached_fixpoint};
    }
    b.environment = session_.environment();
    return b;
  }

  double calls_per_s() const { return run_s_ > 0 ? static_cast<double>(num_calls_) / run_s_ : 0; }

  std::string status_line() const {
    return fmt::format("[stress {}] {} scenarios, {} calls ({:.0f} calls/s), {} failure{}",
                       format_elapsed_s(elapsed_s()), num_scenarios_, num_calls_, calls_per_s(),
                       failures_.size(), failures_.size() == 1 ? "" : "s");
  }

  // A rewritten line on a terminal (redrawn at once after a failure's lines),
  // a plain line every ~10 s otherwise.
  void update_status(bool after_failure) {
    if (v_.report.verbosity() < 0) return;
    const double now = elapsed_s();
    if (style_.tty) {
      if (!after_failure && now - last_status_s_ < kTtyStatusEveryS) return;
      std::printf("\r\033[K%s", status_line().c_str());
      status_shown_ = true;
    } else {
      if (now - last_status_s_ < kPlainStatusEveryS) return;
      std::printf("%s\n", status_line().c_str());
    }
    last_status_s_ = now;
    std::fflush(stdout);
  }

  void clear_status() {
    if (!status_shown_) return;
    std::printf("\r\033[K");
    std::fflush(stdout);
    status_shown_ = false;
  }

  std::vector<CaseResult> failure_results() const {
    std::vector<CaseResult> out;
    for (const StressFailure& f : failures_) out.push_back(f.result);
    return out;
  }

  void finish(int exit_code, bool print) {
    report_.cases = failure_results();
    report_.environment = session_.environment()
                              ? std::optional<EnvironmentInfo>(*session_.environment())
                              : std::nullopt;
    report_.wall_s = elapsed_s();
    report_.interrupted_by = interrupts_.signal_received();
    report_.exit_code = exit_code;
    if (!v_.report.json_path.empty())
      write_file_atomically(v_.report.json_path, json().dump(2) + "\n");
    if (print) print_summary(exit_code);
  }

  // The exception reaches main (which prints it and maps the exit code); the
  // JSON report still records what ran.
  void finish_after_exception(int exit_code) {
    clear_status();
    try {
      finish(exit_code, /*print=*/false);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "dcp-check: warning: %s\n", e.what());
    }
  }

  nlohmann::json json() const {
    nlohmann::json j = report_to_json(report_);
    nlohmann::json failures = nlohmann::json::array();
    for (const StressFailure& f : failures_) {
      nlohmann::json fj = {{"index", f.index},
                           {"case_id", f.result.case_id},
                           {"replay", f.result.replay},
                           {"bundle", f.bundle_path}};
      if (f.shrunk) {
        fj["shrunk"] = {{"case_id", format_case_id(f.shrunk->minimal)},
                        {"replay", replay_command(v_.config, v_.config.world, f.shrunk->minimal)},
                        {"num_steps", f.shrunk->num_steps},
                        {"num_attempts", f.shrunk->num_attempts},
                        {"reached_fixpoint", f.shrunk->reached_fixpoint}};
      }
      failures.push_back(std::move(fj));
    }
    // "cases" above lists the failing scenarios only; totals are here.
    j["stress"] = {{"seed", fmt::format("0x{:016x}", v_.seed)},
                   {"seed_given", v_.seed_given},
                   {"duration_s", v_.duration_s},
                   {"iterations", v_.iterations},
                   {"num_scenarios", num_scenarios_},
                   {"num_calls", num_calls_},
                   {"calls_per_s", calls_per_s()},
                   {"run_s", run_s_},
                   {"startup_s", session_.startup_s()},
                   {"num_sessions", session_.num_started()},
                   {"keep_going", v_.keep_going},
                   {"failures", failures}};
    // A test-only broken variant ran: a reader must never take this for the real kernel.
    if (v_.config.mutant != 0) j["stress"]["mutant"] = v_.config.mutant;
    return j;
  }

  void print_summary(int exit_code) const {
    std::printf(
        "%s: %lld scenarios, %lld calls in %s (%.0f calls/s), %zu failure%s, seed 0x%016llx\n",
        verdict_word(exit_code).c_str(), static_cast<long long>(num_scenarios_),
        static_cast<long long>(num_calls_), format_elapsed_s(elapsed_s()).c_str(), calls_per_s(),
        failures_.size(), failures_.size() == 1 ? "" : "s",
        static_cast<unsigned long long>(v_.seed));
    if (v_.report.verbosity() >= 1) {
      std::printf("session start-up %.2f s over %d session%s (not in calls/s)\n", session_.startup_s(),
                  session_.num_started(), session_.num_started() == 1 ? "" : "s");
      std::printf("%s\n", report_.phases.line().c_str());
    }
    for (const StressFailure& f : failures_) {
      const bool small = f.shrunk && f.shrunk->num_steps > 0;
      std::printf("  %s\n",
                  small ? replay_command(v_.config, v_.config.world, f.shrunk->minimal).c_str()
                        : f.result.replay.c_str());
    }
    std::fflush(stdout);
  }

  void say(const std::string& line) const {
    if (v_.report.verbosity() < 0) return;
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }

  const ValidStress& v_;
  TerminalStyle style_;
  RestartingSession session_;
  RunReport report_;
  InterruptGuard interrupts_;
  std::vector<StressFailure> failures_;
  int64_t num_scenarios_ = 0;
  int64_t num_calls_ = 0;
  double run_s_ = 0;  // time running scenarios: calls/s excludes session start-up and shrinking
  double last_status_s_ = 0;
  bool status_shown_ = false;
  Clock::time_point start_ = Clock::now();
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
  sub->add_option("--json", opts->report.json_path,
                  "Write a JSON report (failing scenarios plus a \"stress\" summary)");
  sub->add_flag("-q,--quiet", opts->report.quiet, "No status line; failures and verdict only");
  sub->add_flag("-v,--verbose", opts->report.verbose, "More detail from the sessions");
  sub->callback([opts, &ctx] {
    ctx.action = [opts, &ctx] {
      const ValidStress v = validate_stress_options(*opts);
      StressCommand command(v, ctx.argv);
      return command.execute();
    };
  });
  return sub;
}

}  // namespace dcp
