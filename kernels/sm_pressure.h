// SM pressure (Case::pressure): a co-running kernel that holds most of the
// SMs a rank may use, as the other ubatch's compute does under DBO, so a
// kernel whose spinning blocks fill what is left starves the dispatch a peer
// waits for. Plain C++ (no CUDA syntax).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace dcp {

inline constexpr int kPressureThreads = 1024;  // per block (the probe: two fill an SM's threads)
inline constexpr int kMaxPressureBlocks = 512;

// In mapped pinned host memory: the host writes `closed` and `stop`, each
// block writes its `resident` byte. Zero it before each launch.
struct PressureControl {
  volatile uint32_t closed;  // set once the host stopped waiting: blocks placed later exit
  volatile uint32_t stop;    // set to end the pressure
  volatile uint8_t resident[kMaxPressureBlocks];  // 1: block i holds its SM until stop
};

// `blocks` blocks of kPressureThreads threads and `shared_bytes` of dynamic
// shared memory each (what set_sm_pressure_shared_limit stored: one block
// holds an SM) that stay resident until control->stop (or max_ns of
// %globaltimer). The first admitted block alone polls the host page and
// relays stop through `device_words` (two zeroed u32 of device memory: the
// relay, the poller's claim), so the pressure costs almost no PCIe traffic.
// Not capturable.
cudaError_t launch_sm_pressure(PressureControl* control_dev, uint32_t* device_words, int blocks,
                               uint64_t max_ns, int shared_bytes, cudaStream_t stream);

// Lets the pressure kernel take dynamic shared memory up to `*bytes` (the
// device's opt-in maximum per block) less its static shared memory, and
// stores that in `*bytes`. Call before any pressure runs.
cudaError_t set_sm_pressure_shared_limit(int* bytes);

// Makes this context hold local memory for 1 KiB per thread (the default
// stack limit) by launching a kernel with such a stack frame. The first
// launch that needs local memory otherwise grows it then, which waits for
// every running kernel: under pressure, for the pressure kernel's bound.
cudaError_t launch_local_memory_reserve(cudaStream_t stream);

// How many blocks of kPressureThreads threads this context can hold at once:
// `blocks` such blocks each stay until all have arrived or `window_ns` passed,
// and `words` (three zeroed u32 of device memory) ends with the most that were
// resident together in words[1]. Under MPS this is the client's share.
cudaError_t launch_capacity_probe(uint32_t* words, int blocks, uint64_t window_ns,
                                  cudaStream_t stream);

}  // namespace dcp
