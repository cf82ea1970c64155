// The one interface between the case runner and what executes the operation:
// the GPU (CUDA IPC symmetric memory + our kernels) or the host model (shared
// memory + the same protocol with C++ atomics). A backend instance serves one
// rank in one DCP group and owns that group's persistent workspace.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "case.h"
#include "device_check.h"
#include "errors.h"
#include "generator.h"
#include "kernel_plugin.h"
#include "phase_times.h"
#include "rendezvous.h"
#include "wait_status.h"

namespace dcp {

// Kernel contexts a backend may hold per rank (Case::num_contexts): context 0
// is made at start-up, context 1 by the first case that uses it (begin_case).
inline constexpr int kMaxContexts = 2;

struct BackendConfig {
  int global_rank = 0;
  int group_rank = 0;        // rank within the DCP group
  int group_idx = 0;         // which group of this size (world / dcp_size groups)
  int dcp_size = 2;
  std::vector<int> members;  // global ranks of this group, ascending
  Geometry geometry;         // sizes the workspace (max_tokens, H, D)
  std::shared_ptr<const LoadedKernel> kernel;  // the kernel under test (built-in or plugin)
  int mutant = 0;            // 0: the correct kernel; >0 only from `selftest` (1-based, kernel's list)
  double spin_timeout_s = 10;  // bounded device/host spin before trap
  int device = 0;            // CUDA device ordinal (gpu backend)
  WaitStatus* status = nullptr;  // this rank's status board entry
  volatile uint32_t* in_kernel = nullptr;  // board mark: 1 while inside a kernel (plugin) function
  std::string run_id;        // unique per run: names shared-memory segments
  // Call buffers sized exactly (under compute-sanitizer: memcheck then sees a
  // read one element past an input); else grown by powers of two, so a
  // process reallocates each a few times, not at every new largest shape.
  bool exact_buffers = false;
};

// One call's inputs on this rank, exactly as the kernel reads them.
struct CallInputs {
  int op_idx = 0;            // call index * num_layers + layer
  int slot = 0;              // ubatch slot
  int context = 0;           // kernel context, < c.num_contexts (plan.h, contexts_of_ops)
  uint32_t skew_ns = 0;      // delay before this call (0: none)
  std::vector<uint8_t> partial_output;  // T rows of out_token_stride() elements, out dtype
  // Set instead of partial_output (left empty) for a backend that writes the
  // inputs on the device (produces_inputs()): the streams they come from.
  std::optional<OutputStreams> output_streams;
  std::vector<uint8_t> partial_lse;     // T rows of lse_token_stride() elements, lse dtype
  std::vector<int32_t> seq_lens;        // empty when the case has no masking
  std::vector<int32_t> query_start_loc; // seq_lens.size() + 1 entries, or empty
  // Set instead of partial_lse (left empty) for a backend that writes the
  // inputs on the device, unless a slow producer copies them: the stream the
  // LSE comes from (its kinds pointer left null: row_kinds has them).
  std::optional<LseStream> lse_stream;
  // For a backend that produces inputs: every source's [W][T] row kinds
  // (LseRowKind), read by the LSE stream and the device checker.
  std::vector<uint8_t> row_kinds;
  // Set for a backend that checks on the device (checks_on_device()) when the
  // runner wants it to: the device checker's parameters (pointers left null;
  // kernels/device_check.h).
  std::optional<DeviceCheckParams> device_check;
  // With device_check: whether the output must come back to the host too (the
  // CPU checker's audit, a failing case, --against). The backend copies it
  // anyway when the device checker finds a mismatch or a damaged guard.
  bool copy_output = true;
};

// One call's output as run_batch returns it: the [T, H, D] output and, when
// the kernel emits one (emits_combined_lse), the [T, H] fp32 combined LSE.
// The bytes live in memory the output holds a share of: its own vector (the
// host backends) or a lease on the GPU backend's pinned staging, where the
// device copied them; the lease goes back to the backend's pool when the
// last copy of the CallOutput is dropped. So the check reads the bytes where
// they landed, and the runner copies nothing. Copies share the bytes.
class CallOutput {
 public:
  CallOutput() = default;
  // `bytes`: the output, then the combined LSE from byte `output_bytes` on.
  CallOutput(std::vector<uint8_t> bytes, size_t output_bytes) {
    auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    DCP_CHECK(output_bytes <= owned->size(), HarnessError,
              "an output of {} bytes split at byte {}", owned->size(), output_bytes);
    output_ = std::span<uint8_t>(*owned).first(output_bytes);
    lse_ = std::span<uint8_t>(*owned).subspan(output_bytes);
    owner_ = std::move(owned);
  }
  // Bytes inside memory that `owner` keeps alive.
  CallOutput(std::shared_ptr<void> owner, std::span<uint8_t> output, std::span<uint8_t> lse)
      : owner_(std::move(owner)), output_(output), lse_(lse) {}
  std::span<uint8_t> output() const { return output_; }
  std::span<uint8_t> lse() const { return lse_; }  // empty unless the kernel emits it
  // The device checker's verdict, when the call was checked on the device.
  // The bytes are then present only when they were copied back
  // (CallInputs::copy_output, or the device found something): has_bytes().
  const std::optional<DeviceCheckResult>& device_verdict() const { return device_; }
  void set_device_verdict(const DeviceCheckResult& r) { device_ = r; }
  void drop_device_verdict() { device_.reset(); }
  bool has_bytes() const { return owner_ != nullptr; }

 private:
  std::shared_ptr<void> owner_;
  std::span<uint8_t> output_, lse_;
  std::optional<DeviceCheckResult> device_;
};

// Outputs held in vectors (each the output, then the combined LSE, if any).
inline std::vector<CallOutput> owned_outputs(std::vector<std::vector<uint8_t>> outputs,
                                             size_t output_bytes) {
  std::vector<CallOutput> out;
  out.reserve(outputs.size());
  for (auto& bytes : outputs) out.emplace_back(std::move(bytes), output_bytes);
  return out;
}

// Calls executed together. kEager: host sync after each call. kGraph: one graph
// per slot captured on first use, inputs copied into the captured buffers and
// the output poisoned before every replay. kPipelined: all calls launched back
// to back with no host sync, each with its own buffers.
struct Batch {
  ExecMode mode = ExecMode::kEager;  // never kMixed here
  std::vector<CallInputs> calls;
  // If set, the backend adds its stage, wait and collect time here (the case
  // runner counts the rest of run_batch as launch).
  PhaseTimes* phases = nullptr;
  // If set, the backend appends one line per damaged guard zone
  // (guard_zone.h): a write out of bounds, found after the call completed.
  std::vector<std::string>* out_of_bounds = nullptr;
};

// Bytes of one call's [T, H, D] output and of its [T, H] fp32 combined LSE.
inline size_t output_bytes(const Case& c) {
  return size_t{2} * c.num_tokens * c.geometry.heads_per_rank * c.geometry.head_dim;
}
inline size_t combined_lse_bytes(const Case& c) {
  return size_t{4} * c.num_tokens * c.geometry.heads_per_rank;
}

class RankBackend {
 public:
  virtual ~RankBackend() = default;
  virtual std::string name() const = 0;  // "gpu" or "host"
  // True when the backend writes partial_output itself from
  // CallInputs::output_streams (the GPU: a device kernel right before the call).
  virtual bool produces_inputs() const { return false; }
  // True when the kernel writes the combined LSE (DCP_CAP_COMBINED_LSE; the
  // host model always): each CallOutput of run_batch then has the [T, H] fp32
  // combined LSE (combined_lse_bytes), poisoned with NaN before the call and
  // guarded like the output.
  virtual bool emits_combined_lse() const { return false; }
  // True when the backend runs the device checker for calls that carry
  // CallInputs::device_check (the GPU); the others ignore it.
  virtual bool checks_on_device() const { return false; }
  // Called by every group rank between two group barriers, so the workspace is
  // quiescent: creates the second kernel context (a collective) the first time
  // c.num_contexts == 2, and resets every context's slot epochs and flags when
  // c.epoch_start is set.
  virtual void begin_case(const Case& c) = 0;
  // True when begin_case(c) touches nothing a peer reads or writes (only
  // what this rank alone owns, after its own work is done): the worker then
  // skips the first barrier, since the one after begin_case already finds
  // every rank of the group quiescent. Decided from the case and the
  // kernel's declaration alone, so every group rank decides alike.
  virtual bool begin_case_is_local(const Case& c) const {
    (void)c;
    return false;
  }
  // Runs a batch; returns each call's output (CallOutput: [T, H, D]
  // contiguous in the out dtype, and the combined LSE), in call order. Outputs are poisoned (all-ones bit pattern, a NaN in
  // fp16 and bf16) before every call, so unwritten elements are caught.
  // Throws KernelFault for device traps and hangs, HarnessError otherwise.
  virtual std::vector<CallOutput> run_batch(const Case& c, const Batch& batch) = 0;
  // `dcp-check bench`: captures one CUDA graph of the batch's calls back to back
  // (call i reads its own input buffers), replays it `warmup` times, then for
  // each of `repeats`: barrier() (a group barrier, so ranks start together),
  // `replays` replays between two events. Returns per-op microseconds per
  // repeat: elapsed / (replays * calls). Only the GPU backend times anything.
  struct BenchTiming {
    int warmup = 0;
    int repeats = 0;
    int replays = 0;
  };
  virtual std::vector<double> bench(const Case& c, const Batch& batch, const BenchTiming& timing,
                                    const std::function<void()>& barrier);
};

inline std::vector<double> RankBackend::bench(const Case&, const Batch&, const BenchTiming&,
                                              const std::function<void()>&) {
  throw UsageError("bench needs the GPU backend: timings of the CPU model mean nothing");
}

}  // namespace dcp
