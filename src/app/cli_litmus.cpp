// `dcp-check litmus`: measures how often this GPU shows the weak outcomes of
// the classic litmus shapes, between blocks, between two kernels of one
// process and between two processes sharing the GPU (as our ranks do), with
// and without memory stress. A measurement, not a test: exit 0 once measured,
// 3 when a forbidden outcome shows (the harness or the GPU is wrong), 2 for
// usage or no GPU. Method and results: docs/DESIGN.md "Weak memory on one
// GPU", docs/results/.
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>

#include "cli.h"
#include "errors.h"
#include "litmus_report.h"
#include "litmus_runner.h"
#include "memory_stress_config.h"
#include "mps.h"
#include "report_file.h"

namespace dcp {
namespace {

struct LitmusOptions {
  uint64_t iterations = 4'000'000;
  uint64_t seed = 0x5eed;
  std::string mps = "auto";
  int device = 0;
  std::string json;
  bool skip_processes = false;
  bool no_save = false;
};

// A private directory for the MPS daemon's pipes and logs, removed on every exit.
struct RunDir {
  std::string path;
  RunDir() {
    char name[] = "/tmp/dcp-litmus-XXXXXX";
    if (mkdtemp(name) == nullptr) throw HarnessError("litmus: cannot create a run directory");
    path = name;
  }
  ~RunDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;
};

MpsMode parse_mps(const std::string& mode) {
  if (mode == "on") return MpsMode::kOn;
  if (mode == "off") return MpsMode::kOff;
  if (mode == "auto") return MpsMode::kAuto;
  throw UsageError(fmt::format("--mps {}: must be auto, on or off", mode));
}

// Makes this process (and the peers it spawns) an MPS client as `mps` says.
// Must run before the first CUDA call.
void apply_mps_env(const MpsController& mps) {
  for (const auto& name : mps.worker_unset()) unsetenv(name.c_str());
  for (const auto& [name, value] : mps.worker_env()) setenv(name.c_str(), value.c_str(), 1);
}

double best_rate(const std::vector<LitmusRow>& calibration, const LitmusStress& best) {
  for (const auto& row : calibration) {
    if (stress_name(row.stress) == stress_name(best)) return row.tally.weak_per_million();
  }
  return 0;
}

LitmusRow timed_run(LitmusRunner& runner, const LitmusTest& test, const LitmusStress& stress,
                    uint64_t iterations, std::mt19937_64& rng) {
  const auto start = std::chrono::steady_clock::now();
  LitmusRow row{test, stress, runner.run(test, stress, iterations, rng), 0};
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return row;
}

int run_litmus(const LitmusOptions& o) {
  if (o.iterations < 1000) throw UsageError("--iterations must be at least 1000");
  const MpsMode mode = parse_mps(o.mps);
  const RunDir run_dir;
  // Two processes share one GPU in the `processes` tests.
  auto mps = std::make_unique<MpsController>(mode, /*gpu_backend=*/true, /*world=*/2,
                                             /*num_gpus=*/1, run_dir.path);
  apply_mps_env(*mps);
  LitmusReport report;
  report.mps = mps->description();
  report.seed = o.seed;
  report.iterations = o.iterations;
  std::string gpu_name;
  int sms = 0;
  {
    LitmusRunner runner(o.device);
    gpu_name = runner.info().name;
    sms = runner.info().sms;
    report.device = fmt::format("{}, {} SMs", runner.info().name, runner.info().sms);
    std::fprintf(stderr, "litmus: %s; MPS %s\n", report.device.c_str(), report.mps.c_str());
    std::mt19937_64 rng(o.seed);
    std::vector<LitmusStress> sweep = {LitmusStress{}};
    for (const auto& s : stress_sweep(runner.info().sms)) sweep.push_back(s);
    for (const auto& s : sweep) {
      report.calibration.push_back(timed_run(runner, calibration_test(), s, o.iterations, rng));
      std::fprintf(stderr, "litmus: calibration %s: %.1f per million\n", stress_name(s).c_str(),
                   report.calibration.back().tally.weak_per_million());
    }
    report.best = best_stress(report.calibration);
    for (const auto& test : litmus_tests()) {
      if (o.skip_processes && test.placement == LitmusPlacement::kProcesses) continue;
      for (const auto& s : {LitmusStress{}, report.best}) {
        report.rows.push_back(timed_run(runner, test, s, o.iterations, rng));
        if (s.pattern == StressPattern::kNone && report.best.pattern == StressPattern::kNone) break;
      }
    }
  }
  mps->stop();
  std::fputs(render_litmus(report).c_str(), stdout);
  if (!o.json.empty()) write_file_atomically(o.json, litmus_json(report).dump(2) + "\n");
  // The memory-stress cases of this GPU model use the best setting from now on.
  if (!o.no_save && report.best.pattern != StressPattern::kNone) {
    const std::string path = memory_stress_cache_path();
    const int per_sm = std::max(1, report.best.blocks / std::max(1, sms));
    save_memory_stress(path, gpu_name, report.best, per_sm,
                       best_rate(report.calibration, report.best));
    std::printf("memory stress for '%s': %s, saved to %s\n", gpu_name.c_str(),
                stress_name(report.best).c_str(), path.c_str());
  }
  bool contradiction = false;
  litmus_conclusions(report, &contradiction);
  return contradiction ? 3 : 0;
}

}  // namespace

CLI::App* add_litmus_command(CLI::App& app, CliContext& ctx) {
  auto o = std::make_shared<LitmusOptions>();
  CLI::App* cmd = app.add_subcommand(
      "litmus",
      "Measure weak memory behaviour on this GPU: message passing, store and load buffering "
      "between blocks, kernels and processes, with and without memory stress (needs a GPU)");
  cmd->add_option("--iterations", o->iterations,
                  "instances (one-shot) or reader samples (counter) per setting, at least")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the role and stress draws")->capture_default_str();
  cmd->add_option("--mps", o->mps,
                  "auto|on|off: whether the two processes of the `processes` tests run at once "
                  "under MPS (on: a private daemon for this run)")
      ->capture_default_str();
  cmd->add_option("--device", o->device, "CUDA device")->capture_default_str();
  cmd->add_option("--json", o->json, "write the table as JSON to this file");
  cmd->add_flag("--skip-processes", o->skip_processes, "leave out the two-process tests");
  cmd->add_flag("--no-save", o->no_save,
                "do not store the best stress for this GPU model (memory-stress cases use it)");
  cmd->callback([&ctx, o] { ctx.action = [o] { return run_litmus(*o); }; });
  return cmd;
}

}  // namespace dcp
