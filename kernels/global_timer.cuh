// The device's global nanosecond timer (%globaltimer), shared by every kernel
// that bounds a wait or a spin in time. Device code only.
#pragma once

#include <cstdint>

namespace dcp {

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace dcp
