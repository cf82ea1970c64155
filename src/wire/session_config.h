// What a session is configured with and what it found about its machine: the
// types the command line fills, the worker protocol carries and the reports
// print. No processes here (session.h is the Session itself).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "case.h"
#include "checker.h"
#include "kernel_plugin.h"

namespace dcp {

enum class BackendKind : uint8_t { kGpu, kHost };
enum class MpsMode : uint8_t { kAuto, kOn, kOff };

// Test-only fault injection (hidden flags). The chosen rank misbehaves at the
// chosen case index (of this session) and op.
struct FaultSpec {
  enum class Kind : uint8_t { kNone, kCrash, kHang, kStall, kCorrupt, kCudaError, kOom };
  Kind kind = Kind::kNone;
  int rank = 0;
  int case_index = 0;
  int op_idx = 0;
};

struct SessionConfig {
  int world = 2;
  Geometry geometry;
  BackendKind backend = BackendKind::kGpu;
  // The kernel under test (--kernel direct|stock|PATH) and, optionally, a
  // second one run on the same cases and compared with it (--against): within
  // the reference tolerance, or bit for bit when against_exact
  // (--against-exact, --impl both; check/impl_agreement.h).
  KernelInfo kernel = default_kernel_info();  // loaded and validated by the command
  std::optional<KernelInfo> against;
  bool against_exact = false;
  int mutant = 0;                 // selftest only: 1-based index into kernel.mutants

  // The kernel under test, then the --against one if any.
  std::vector<const KernelInfo*> kernels() const {
    std::vector<const KernelInfo*> out = {&kernel};
    if (against) out.push_back(&*against);
    return out;
  }
  double timeout_s = 10;          // per-call deadline
  MpsMode mps = MpsMode::kAuto;
  CheckProfile profile;
  FaultSpec fault;
  bool check_determinism = false; // run each case twice, require identical bits
  // GPU backend: every worker observes its kernel launches with CUPTI
  // (backends/gpu/launch_observer.h) for the hang diagnosis and the residency
  // warning; --observe off leaves CUPTI out (the diagnosis then says so).
  bool observe_launches = true;
  int verbosity = 0;              // -q: -1, -v: 1
  // --sanitize TOOL: every worker runs under compute-sanitizer (session/sanitizer.h);
  // "" runs them bare. sanitizer_path: the compute-sanitizer found for it.
  std::string sanitize_tool;
  std::string sanitizer_path;
  // replay --dump DIR: every rank writes its case's tensors there as .npy
  // (worker/case_dump.h); the replay command writes the manifest. "" none.
  std::string dump_dir;
  // The one-line command that reruns a case with this configuration (built by
  // the app layer, app/replay.h; the session only copies it into CaseResult).
  std::function<std::string(const SessionConfig&, const Case&)> replay_line;
};

// Under compute-sanitizer every per-call deadline is this many times
// --timeout (instrumented kernels run far slower); else --timeout itself.
// Equal to kSanitizerTimeoutScale (session/sanitizer.h).
inline constexpr double kSanitizedTimeoutScale = 20;
inline double effective_timeout_s(const SessionConfig& c) {
  return c.sanitize_tool.empty() ? c.timeout_s : c.timeout_s * kSanitizedTimeoutScale;
}

// config.replay_line(config, c), or "" when the caller set none.
inline std::string replay_line_for(const SessionConfig& config, const Case& c) {
  return config.replay_line ? config.replay_line(config, c) : std::string();
}

struct GpuInfo {
  int index = 0;
  std::string name;
  std::string uuid;
};

// The parts of a session's shut-down, seconds.
struct ShutdownTimes {
  double workers_s = 0;  // from the shutdown message to the last worker reaped (or killed)
  double mps_s = 0;      // quitting the private MPS daemon and waiting for it and its server
  double rest_s = 0;     // sockets, shared memory, the run directory
  // Workers of a live session still running at the shutdown deadline (killed):
  // 0 unless a worker missed its shutdown message.
  int workers_killed = 0;
};

struct EnvironmentInfo {
  std::string backend;          // "gpu" or "host"
  std::string mps_mode;         // what actually ran: "off", "on (private daemon)", "auto (user daemon)"
  std::vector<GpuInfo> gpus;
  std::vector<int> rank_gpu;    // rank -> gpu index
  bool ranks_share_gpu = false;
  std::string driver_version;
  std::string cuda_runtime_version;
  std::string nccl_version;     // "" when not loaded
  std::string dcp_version;
  std::string git_revision;
  std::string hostname;
  double teardown_s = 0;        // `run`: the session's shut-down after the last case
  ShutdownTimes teardown;       // `run`: its parts
  double startup_s = 0;         // session start: GPUs, MPS, workers, workspaces, kernel init
  // What observes the workers' kernel launches ("CUPTI launch callbacks and
  // events", or "launches not observed: <why>"), as rank 0's observer said.
  std::string launch_observation;
  // Grids larger than what can be resident at once (launch_diagnosis.h), one
  // per kernel shape, in the order first seen, with the ranks that saw it.
  std::vector<std::string> residency_warnings;
  // GPU backend: the memory stress the memory-stress cases run on GPU 0's
  // model (wire/memory_stress_config.h), with where it came from.
  std::string memory_stress;
};

// The workers ran as clients of an MPS daemon (a private one, or the user's
// joined by --mps auto), read from what MpsController described.
inline bool mps_active(const EnvironmentInfo& env) {
  return env.mps_mode.starts_with("on: private") || env.mps_mode.starts_with("auto: user daemon");
}

}  // namespace dcp
