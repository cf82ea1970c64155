// What a worker saw its process launch on the GPU, published where the
// supervisor reads it without the worker's (or the kernel's) help: one
// LaunchTable per rank on the status board. The GPU backend's launch observer
// (backends/gpu/launch_observer.*, CUPTI callbacks) writes it; any kernel,
// ours or a plugin that publishes nothing, is observed the same way.
//
// Invariants: records are written by the thread that launched (the CUPTI
// callback) and completed by the observer thread on a snapshot request; the
// supervisor reads a table only after the worker answered a snapshot request
// (snapshot_done == snapshot_request) or gave up waiting for it, so a torn
// record is at worst one stale field of the last launch. Plain C++ (no CUDA).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dcp {

inline constexpr int kLaunchRing = 128;        // the last launches of the process
inline constexpr int kLaunchNameBytes = 96;    // demangled, shortened kernel name
inline constexpr int kStreamLabelBytes = 32;   // "dcp2 slot 1", "dcp-check pressure"
inline constexpr int kMaxControlDumps = 16;    // CONTROL regions dumped at a snapshot
inline constexpr int kControlDumpBytes = 512;  // the first bytes of each
inline constexpr int kMaxResidencyWarnings = 8;
inline constexpr int kWarningBytes = 256;

enum class LaunchOrigin : uint32_t {
  kHarness = 0,  // dcp-check's own kernels (inputs, poison, SM pressure)
  kKernel = 1,   // launched inside a function of the kernel under test
  kGraph = 2,    // a CUDA graph replay (its kernels were captured from the kernel)
};

enum class LaunchState : int32_t {
  kLaunched = 0,   // not seen complete (at the last snapshot)
  kCompleted = 1,  // an event recorded right after it had completed
  kCaptured = 2,   // recorded into a graph capture: runs only as part of a replay
};

struct LaunchRecord {
  uint64_t seq = 0;  // 1-based launch number in the process; 0: an unused entry
  int32_t case_index = -1;
  int32_t op_idx = -1;  // the case's op (call index * layers + layer), -1 outside a call
  int32_t slot = -1;
  int32_t dcp_size = 0;  // the group of the backend that launched it
  uint32_t stream_ordinal = 0;  // per process, in order of first use
  LaunchOrigin origin = LaunchOrigin::kHarness;
  LaunchState state = LaunchState::kLaunched;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t dyn_smem_bytes = 0;
  int32_t blocks_per_sm = -1;  // occupancy of its function; -1 unknown (or a graph)
  int32_t usable_sms = 0;      // SMs this rank could use at the launch (MPS share, less pressure)
  int64_t launched_ns = 0;     // CLOCK_MONOTONIC (the same clock in every process)
  int64_t completed_ns = 0;    // when first seen complete (a snapshot), 0: not seen
  char name[kLaunchNameBytes] = {};
  char stream_label[kStreamLabelBytes] = {};

  uint64_t grid_blocks() const { return uint64_t{grid[0]} * grid[1] * grid[2]; }
  // Blocks that can be resident at once on the SMs it could use; -1 unknown.
  int64_t resident_blocks() const {
    return blocks_per_sm < 0 ? -1 : int64_t{blocks_per_sm} * usable_sms;
  }
};

struct ControlDump {
  char name[32] = {};     // the region's name, as the kernel asked for it
  int32_t dcp_size = 0;   // the group whose workspace holds it
  int32_t context = 0;    // kernel context (two-contexts cases)
  int32_t local = 0;      // 1: a LOCAL region (small ones are dumped too: epochs live there)
  uint64_t bytes = 0;     // the region's size
  uint32_t dumped = 0;    // bytes copied into data (<= kControlDumpBytes)
  int32_t status = 0;     // 0 copied, 1 the copy did not finish in time, 2 failed
  uint8_t data[kControlDumpBytes] = {};
};

enum class ObserverState : uint32_t { kOff = 0, kOn = 1 };

struct LaunchTable {
  ObserverState state = ObserverState::kOff;
  char note[160] = {};  // why observation is off, or what observes ("CUPTI callbacks")
  int32_t device_sms = 0;  // the GPU's SMs
  int32_t rank_sms = 0;    // SMs this process may use (its MPS share), 0 unknown
  int32_t pressure_sms = 0;  // SMs an SM-pressure kernel holds right now
  // Snapshot handshake (futex words): the supervisor bumps the request, the
  // worker's observer thread refreshes completions and control dumps, then
  // sets done to the request it answered.
  std::atomic<uint32_t> snapshot_request{0};
  std::atomic<uint32_t> snapshot_done{0};
  int64_t snapshot_ns = 0;
  std::atomic<uint64_t> next_seq{0};
  LaunchRecord ring[kLaunchRing];  // record seq s at ring[(s - 1) % kLaunchRing]
  int32_t num_control = 0;
  ControlDump control[kMaxControlDumps];
  std::atomic<uint32_t> num_warnings{0};
  char warnings[kMaxResidencyWarnings][kWarningBytes] = {};
};
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
              std::atomic<uint64_t>::is_always_lock_free);

// CLOCK_MONOTONIC in ns: what launched_ns and completed_ns hold.
int64_t monotonic_ns();

}  // namespace dcp
