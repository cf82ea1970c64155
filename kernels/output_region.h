// One call's output region on the device, laid out as
//   [guard | output | guard]                 (out_bytes, guards of guard_bytes)
//   [guard | output | guard | LSE | guard]   (when the kernel writes the combined LSE)
// Before every call the harness fills it in one kernel launch: the guards
// with the canary, the output (and LSE) with 0xFF (NaN in every dtype: what a
// kernel leaves unwritten reads as poison). After the call the whole region
// comes back in one copy, guards included.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dcp {

struct OutputRegion {
  void* base = nullptr;  // device memory, 4-byte aligned
  size_t guard_bytes = 0, out_bytes = 0, lse_bytes = 0;  // each a multiple of 4
  size_t total_bytes() const {
    return out_bytes + 2 * guard_bytes + (lse_bytes > 0 ? lse_bytes + guard_bytes : 0);
  }
};

// cudaErrorInvalidValue when a size or the base is not a multiple of 4. Capturable.
cudaError_t launch_fill_output_region(const OutputRegion& r, uint8_t canary, cudaStream_t stream);

}  // namespace dcp
