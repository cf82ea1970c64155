// What a failure means, as a type: set where the failure is detected (the
// checker, the backends, the worker, the supervisor's diagnosis), carried in
// RankCaseResult / CaseResult and the worker protocol, written in reports by
// name. Exit codes come from it only through exit_code() (exit_code.h).
#pragma once

#include <optional>
#include <string_view>

namespace dcp {

// Declared in headline order: when a case has several, the first in this
// order names the case (a peer's trap, not the hang it caused; the kernel's
// failure before the harness's).
enum class FailureKind : unsigned char {
  kSanitizer,         // compute-sanitizer (--sanitize) reported an error in a kernel: the
                      // most precise cause (a trap or mismatch it causes comes after it)
  kTrap,              // a device fault inside the kernel: trap, illegal address/instruction
  kCudaError,         // another CUDA error inside the op (injected ones too)
  kKernelError,       // the kernel returned an error status (plugin ABI: init, call, set_epoch)
  kCrash,             // a worker died while inside the kernel under test
  kOutOfBounds,       // the kernel wrote into a guard zone (before/after a buffer it may write)
  kOverCapacity,      // the kernel accepted a call over its workspace's capacity (T > max_tokens)
  kNondeterministic,  // the determinism rerun produced other output bits
  kHang,              // no progress past the deadline, or a bounded device wait gave up
  kMismatch,          // the checker found wrong elements (some not NaN)
  kNan,               // the checker found wrong elements, every one NaN
  kWorkerDied,        // a worker died (signal, exit, closed socket) outside the kernel
  kHarness,           // dcp-check itself failed
  kUsage,             // bad usage or missing environment
  kInterrupted,       // SIGINT/SIGTERM tore the case down
  kNone,              // no failure (passed, skipped)
};

// "sanitizer", "trap", "cuda-error", "kernel-error", "crash", "out-of-bounds", "over-capacity",
// "nondeterministic", "hang",
// "mismatch", "nan", "worker-died", "harness", "usage", "interrupted", "none".
std::string_view to_string(FailureKind k);
std::optional<FailureKind> failure_kind_from_string(std::string_view name);

// The kernel under test is to blame (exit 1): kSanitizer .. kNan.
bool is_kernel_failure(FailureKind k);
// The older coarse class, kept in reports: "" (none, mismatch, nan), "kernel",
// "harness" (worker-died, harness, interrupted), "usage".
std::string_view error_class(FailureKind k);
// The one of the two that names a case (earlier in headline order).
FailureKind headline(FailureKind a, FailureKind b);

}  // namespace dcp
