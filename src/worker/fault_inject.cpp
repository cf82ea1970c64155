// Test-only device faults. Real CUDA calls on the GPU backend, so the error
// path is the one a failing kernel launch or allocation takes.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "case_runner.h"
#include "errors.h"

namespace dcp {

void throw_injected_device_fault(FaultSpec::Kind kind, bool gpu, int rank) {
  const bool oom = kind == FaultSpec::Kind::kOom;
  if (!gpu) {
    throw KernelFault(
        fmt::format("rank {}: injected {} (host model of {})", rank, oom ? "oom" : "cuda_error",
                    oom ? "cudaErrorMemoryAllocation: out of memory" : "a failing CUDA call"),
        FailureKind::kCudaError);
  }
  cudaError_t err = cudaSuccess;
  if (oom) {
    void* ptr = nullptr;
    err = cudaMalloc(&ptr, size_t{1} << 52);  // 4 PiB: no GPU has it
    if (err == cudaSuccess) cudaFree(ptr);
  } else {
    err = cudaSetDevice(-1);
  }
  cudaGetLastError();  // neither error is sticky; clear it for teardown
  throw KernelFault(
      fmt::format("rank {}: injected {}: CUDA error {}: {}", rank, oom ? "oom" : "cuda_error",
                  cudaGetErrorName(err), cudaGetErrorString(err)),
      FailureKind::kCudaError);
}

}  // namespace dcp
