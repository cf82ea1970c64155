// A Session is one supervisor with its N live workers: spawned, connected,
// workspaces built. Commands (run, replay, stress, shrink, selftest, bench) use
// it to run cases; every failure path still tears everything down (RAII).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string>
#include <vector>

#include "backend.h"
#include "bench.h"
#include "case.h"
#include "checker.h"
#include "kernel_plugin.h"
#include "results.h"

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
  // second one run on the same cases and compared bit for bit (--against).
  KernelInfo kernel = default_kernel_info();  // loaded and validated by the command
  std::optional<KernelInfo> against;
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
  int verbosity = 0;              // -q: -1, -v: 1
};

struct GpuInfo {
  int index = 0;
  std::string name;
  std::string uuid;
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
  double startup_s = 0;         // session start: GPUs, MPS, workers, workspaces, kernel init
};

class Session {
 public:
  // Spawns workers and builds every group's workspace. Throws UsageError for a
  // missing GPU/driver (pointing at --backend host), HarnessError otherwise.
  explicit Session(const SessionConfig& config);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs one case on every rank (all groups of its dcp size concurrently).
  // A hang, crash or trap yields kError with the diagnosis in `message`, and
  // the session becomes dead(): later calls return kSkipped immediately.
  CaseResult run_case(const Case& c, const std::string& suite);
  // `dcp-check bench` (GPU backend only; UsageError otherwise): every token
  // count x impl of the spec, timed on one DCP group of the whole world, each
  // followed by an output check. Stops at the first error (the session dies).
  BenchResult run_bench(const BenchSpec& spec);
  bool dead() const;
  const EnvironmentInfo& environment() const;
  const SessionConfig& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dcp
