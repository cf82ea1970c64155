// The one error header. Exceptions carry their failure kind (failure.h);
// exit_code() (exit_code.h) is the only place kinds become exit codes (SPEC
// section 2): 1 kernel failure, 2 usage or environment, 3 harness failure.
// Helpers never call exit().
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "failure.h"

namespace dcp {

enum ExitCode : int { kExitPass = 0, kExitKernelFailure = 1, kExitUsage = 2, kExitHarness = 3 };

// Bad flag, bad value, missing GPU/driver/NCCL: the user must change something.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The kernel under test misbehaved: trap, hang, CUDA error inside our op.
// `kind` is always one is_kernel_failure() accepts (others become kKernelError).
struct KernelFault : std::runtime_error {
  explicit KernelFault(const std::string& what, FailureKind k = FailureKind::kKernelError)
      : std::runtime_error(what), kind(is_kernel_failure(k) ? k : FailureKind::kKernelError) {}
  FailureKind kind;
};
// A device fault that surfaced at a later CUDA call of ours (an allocation, a
// copy): the kernel's trap, thrown by CUDA_CHECK; the GPU backend adds its
// wait diagnosis before passing it on.
struct StickyDeviceFault : KernelFault {
  explicit StickyDeviceFault(const std::string& what) : KernelFault(what, FailureKind::kTrap) {}
};
// The kernel refused a call's arguments (plugin ABI: INVALID_ARGUMENT). A
// kernel failure, except in a capacity case (T = max_tokens + 1), where every
// rank must refuse.
struct KernelRefusal : KernelFault {
  explicit KernelRefusal(const std::string& what) : KernelFault(what) {}
};
// dcp-check itself failed (socket, fork, shared memory, protocol bug).
struct HarnessError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The kind an exception stands for: a KernelFault's own, kUsage for a
// UsageError, kHarness for anything else.
inline FailureKind failure_kind_of(const std::exception& e) {
  if (const auto* k = dynamic_cast<const KernelFault*>(&e)) return k->kind;
  if (dynamic_cast<const UsageError*>(&e) != nullptr) return FailureKind::kUsage;
  return FailureKind::kHarness;
}

}  // namespace dcp

// Messages are user-facing (terminal, reports): they carry no source
// location; grep the message text to find where it is thrown.
#define DCP_THROW(Type, ...) throw Type(fmt::format(__VA_ARGS__))

// A KernelFault of a given kind.
#define DCP_FAULT(kind, ...) throw ::dcp::KernelFault(fmt::format(__VA_ARGS__), kind)

// Wrapped in do/while(0) so it behaves as one statement anywhere.
#define DCP_CHECK(cond, Type, ...)   \
  do {                               \
    if (!(cond)) {                   \
      DCP_THROW(Type, __VA_ARGS__);  \
    }                                \
  } while (0)
