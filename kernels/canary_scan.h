// A block of device memory compared with a one-byte canary on the device, so
// only the verdict crosses to the host (allocation churn's blocks: up to 64
// MiB each, copied whole to the host before). Plain C++ (no CUDA syntax).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dcp {

struct CanaryScan {
  unsigned long long changed;  // bytes that differ from the canary
  unsigned long long first;    // offset of the first of them; ~0 when none
};

// Enqueues on `stream`: `result` (device memory) reset, then every byte of
// [data, data + bytes) compared with `canary`. `data` is 16-byte aligned
// (any cudaMalloc'd pointer); `bytes` any count.
cudaError_t launch_canary_scan(const void* data, size_t bytes, uint8_t canary, CanaryScan* result,
                               cudaStream_t stream);

}  // namespace dcp
