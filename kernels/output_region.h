// One call's output region on the device, laid out as
//   [guard | output | guard]                 (out_bytes, guards of guard_bytes)
//   [guard | output | guard | LSE | guard]   (when the kernel writes the combined LSE)
// Before every call the harness fills it (launch_call_prep, call_prep.h): the
// guards with the canary, the output (and LSE) with 0xFF (NaN in every dtype:
// what a kernel leaves unwritten reads as poison). After the call the whole
// region comes back in one copy, guards included.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dcp {

struct OutputRegion {
  void* base = nullptr;  // device memory, 4-byte aligned
  size_t guard_bytes = 0, out_bytes = 0, lse_bytes = 0;  // each a multiple of 4
  constexpr size_t total_bytes() const {
    return out_bytes + 2 * guard_bytes + (lse_bytes > 0 ? lse_bytes + guard_bytes : 0);
  }
};

}  // namespace dcp
