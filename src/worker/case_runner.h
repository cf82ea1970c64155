// Runs one case on one rank: plan the calls, generate this rank's inputs,
// run them through the backend, check every call's output against the float64
// reference, and summarise as a RankCaseResult. Injected faults (tests only)
// fire here, at the chosen op, so every backend gets the same fault behaviour.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend.h"
#include "case.h"
#include "checker.h"
#include "output_digest.h"
#include "impl_agreement.h"
#include "results.h"
#include "session_config.h"

namespace dcp {

struct CaseRunContext {
  const BackendConfig* backend_config = nullptr;  // ranks and group of this backend
  CheckProfile profile;
  FaultSpec fault;     // fires when fault.rank == global rank and case_index matches
  int case_index = 0;  // index of this case within the session
  // Heartbeat: called before each batch (with its first op) and after each
  // call is checked, so the supervisor's deadline is per call, not per case.
  std::function<void(int op_idx)> progress;
  // If set, receives every call's output and combined LSE, in the order the
  // calls ran (--against compares two kernels' calls: impl_agreement.h).
  std::vector<KeptCall>* outputs = nullptr;
};

class CheckPipeline;

// One case on one rank, in two steps, so that the check of a case's last
// batch can run while the next case runs (the worker's overlap across cases):
// start() runs every batch and leaves the last batch's check pending;
// finish() waits for it and returns the result. Neither throws for kernel or
// harness faults: they become result.error and result.failure
// (failure_kind_of the exception; else the checker's kind). Exceptions that
// are not std::exception (ShutdownRequested) pass through start().
// Not movable (the pending check refers to its members).
class RankCaseRun {
 public:
  RankCaseRun(const Case& c, RankBackend& backend, const CaseRunContext& ctx);
  ~RankCaseRun();  // waits for a pending check
  RankCaseRun(const RankCaseRun&) = delete;
  RankCaseRun& operator=(const RankCaseRun&) = delete;

  // Time spent before start() on this case (the worker's barriers): part of
  // the result's barrier phase.
  // Time the worker spent on this case outside the runner (barriers, idle).
  void add_phase_ms(double PhaseTimes::*phase, double ms) { result_.phases.*phase += ms; }
  void start();
  // After start(): whether finish() still has a check to wait for.
  bool check_pending() const;
  RankCaseResult finish();
  // finish() on the worker's finisher thread while the next case runs: the
  // time it waits is nobody's check-wait (the runner is not waiting).
  RankCaseResult finish_beside_next();

 private:
  Case c_;
  RankBackend& backend_;
  CaseRunContext ctx_;
  RankCaseResult result_;
  std::unique_ptr<CheckPipeline> pipeline_;
  std::vector<std::string> out_of_bounds_;
  bool start_threw_ = false;
  std::chrono::steady_clock::time_point start_time_;
};

// Both steps at once.
RankCaseResult run_case_on_rank(const Case& c, RankBackend& backend, const CaseRunContext& ctx);

// a 64-bit word-wise hash, continued from `hash` (start with kFnvOffset,
// output_digest.h).
uint64_t fnv1a(uint64_t hash, const std::vector<uint8_t>& bytes);
uint64_t fnv1a(uint64_t hash, const uint8_t* bytes, size_t n);
// One call's output hash (kernels/output_digest.h: 1 KiB blocks folded per
// 64 KiB), hashed in parallel on `pool` when it has threads, so the value
// depends on the bytes alone, never on the thread count or the checker. The case's hash folds the calls' digests in op order
// (start with kFnvOffset). Digests run on the check's thread, beside the
// next call. A call's digest is its output's, then, when it has one, its
// combined LSE's folded in.
class ThreadPool;
uint64_t output_digest(std::span<const uint8_t> bytes, ThreadPool* pool = nullptr);
uint64_t call_output_digest(const CallOutput& out, ThreadPool* pool = nullptr);
uint64_t fold_output_digest(uint64_t hash, uint64_t digest);

// Throws the KernelFault an injected cuda_error / oom produces: on the GPU a
// real failing CUDA call (an absurd allocation, an invalid device), on the host
// its stand-in. Defined in fault_inject.cpp.
[[noreturn]] void throw_injected_device_fault(FaultSpec::Kind kind, bool gpu, int rank);

}  // namespace dcp
