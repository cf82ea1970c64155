// CUDA and NCCL error checks. Each macro is one statement (do/while(0)) and
// throws; the message carries the rank (from a `rank` expression the
// caller names) and the library's own error name and string.
//
// CUDA_CHECK(rank, Type, call): Type is the exception class the failure maps
// to: HarnessError for setup, KernelFault inside our op's launch/sync.
#pragma once

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <string>
#include <type_traits>

#include "errors.h"

namespace dcp {

// "cudaErrorLaunchFailure (unspecified launch failure)".
inline std::string cuda_error_text(cudaError_t err) {
  return fmt::format("{} ({})", cudaGetErrorName(err), cudaGetErrorString(err));
}

// Errors that mean a kernel died on the device (trap, illegal access or
// instruction): the context is unusable afterwards and the kernel under test is
// to blame.
inline bool is_device_fault(cudaError_t err) {
  switch (err) {
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

// What a failing CUDA call inside the op means: a bounded device wait gave
// up (the status page says trapped: a hang), a device fault (a trap), or
// another CUDA error.
inline FailureKind cuda_failure_kind(cudaError_t err, bool wait_gave_up = false) {
  if (wait_gave_up) return FailureKind::kHang;
  return is_device_fault(err) ? FailureKind::kTrap : FailureKind::kCudaError;
}

// What CUDA_CHECK throws. A device fault is sticky: it surfaces at whatever
// CUDA call comes next (an allocation, a copy), so it is the kernel's trap
// whichever Type the call site names. Otherwise Type, a KernelFault carrying
// cuda_failure_kind.
template <typename Type>
[[noreturn]] void throw_cuda_error(const std::string& message, cudaError_t err) {
  if (is_device_fault(err)) {
    throw StickyDeviceFault(message +
                            "; a device fault is sticky: a kernel faulted or trapped before this "
                            "call, which only reported it");
  }
  if constexpr (std::is_same_v<Type, KernelFault>) {
    throw KernelFault(message, cuda_failure_kind(err));
  } else {
    throw Type(message);
  }
}

}  // namespace dcp

#define CUDA_CHECK(rank, Type, call)                                                      \
  do {                                                                                    \
    const cudaError_t dcp_cuda_err_ = (call);                                             \
    if (dcp_cuda_err_ != cudaSuccess) {                                                   \
      ::dcp::throw_cuda_error<Type>(                                                      \
          fmt::format("rank {}: {} failed: {}", (rank), #call,                            \
                      ::dcp::cuda_error_text(dcp_cuda_err_)),                             \
          dcp_cuda_err_);                                                                 \
    }                                                                                     \
  } while (0)
