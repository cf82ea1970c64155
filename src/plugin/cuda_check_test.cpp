// CUDA_CHECK's mapping of error codes to exceptions (no GPU needed: the codes
// are passed in; cudaGetErrorName/String are lookups in the runtime).
#include "cuda_check.h"

#include <doctest/doctest.h>

namespace dcp {
namespace {

void fail_with(cudaError_t err) { CUDA_CHECK(3, HarnessError, err); }

TEST_CASE("a device fault surfacing at a harness CUDA call is the kernel's trap") {
  for (cudaError_t err : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorAssert}) {
    try {
      fail_with(err);
      FAIL("no exception");
    } catch (const StickyDeviceFault& e) {
      CHECK(e.kind == FailureKind::kTrap);
      const std::string what = e.what();
      CHECK(what.find("rank 3: err failed: ") == 0);
      CHECK(what.find("a kernel faulted or trapped before this call") != std::string::npos);
      CHECK(what.find(".h:") == std::string::npos);  // no source location
    }
  }
}

TEST_CASE("other CUDA errors keep the type the call site names") {
  CHECK_THROWS_AS(fail_with(cudaErrorMemoryAllocation), HarnessError);
  try {
    CUDA_CHECK(0, KernelFault, cudaErrorInvalidValue);
    FAIL("no exception");
  } catch (const KernelFault& e) {
    CHECK(e.kind == FailureKind::kCudaError);
  }
}

}  // namespace
}  // namespace dcp
