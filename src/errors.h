// The one error header. Exceptions carry their exit-code class; only main()
// turns them into exit codes (SPEC section 2): 1 kernel failure, 2 usage or
// environment, 3 harness failure. Helpers never call exit().
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace dcp {

enum ExitCode : int { kExitPass = 0, kExitKernelFailure = 1, kExitUsage = 2, kExitHarness = 3 };

// Bad flag, bad value, missing GPU/driver/NCCL: the user must change something.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The kernel under test misbehaved: trap, hang, CUDA error inside our op.
struct KernelFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// dcp-check itself failed (socket, fork, shared memory, protocol bug).
struct HarnessError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace dcp

// Wrapped in do/while(0) so they behave as one statement anywhere.
#define DCP_THROW(Type, ...) \
  throw Type(fmt::format("{}:{}: {}", __FILE__, __LINE__, fmt::format(__VA_ARGS__)))

#define DCP_CHECK(cond, Type, ...)   \
  do {                               \
    if (!(cond)) {                   \
      DCP_THROW(Type, __VA_ARGS__);  \
    }                                \
  } while (0)
