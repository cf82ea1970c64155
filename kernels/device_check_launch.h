// The device checker's launch (device_check.h has the types).
#pragma once

#include <cuda_runtime_api.h>

#include "device_check.h"

namespace dcp {

// Enqueues the check of one call on `stream`, one kernel: checks and hashes,
// writes the result into `host_result` directly (pinned host memory from
// cudaMallocHost: under unified addressing the device writes it through the
// same pointer; read it once the stream has passed the check), leaving the
// scratch zeroed again. `scratch_bytes`: the whole buffer (at least
// DeviceCheckScratch::bytes for this call). `zeroed`: the buffer is known to
// be all zero (the last check on it completed); else all of it is zeroed first.
// `region` is the call's output region (output_region.h, guards included).
// Capturable: no host sync.
cudaError_t launch_device_check(const DeviceCheckParams& params, const OutputRegion& region,
                                uint8_t canary, void* scratch, size_t scratch_bytes,
                                bool zeroed, DeviceCheckResult* host_result,
                                cudaStream_t stream);

// Raises the device's per-thread stack limit to the check kernel's local
// memory when it needs more (its frame is about 1 KiB, the limit's default):
// call once at start-up, while nothing runs. Else the check's first launch
// grows the context's local memory, which waits for the device to idle, and
// under MPS that includes a peer's op spinning for this rank (DESIGN, "SM
// pressure").
cudaError_t reserve_device_check_stack();

}  // namespace dcp
