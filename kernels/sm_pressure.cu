// The SM-pressure kernel (see sm_pressure.h). Only residency matters: once a
// block is admitted its threads sleep between barriers (holding half its SM's
// thread slots and, through the launch's dynamic shared memory, all of its
// shared memory) while thread 0 polls, so it takes little issue bandwidth.
#include "sm_pressure.h"

#include "global_timer.cuh"

namespace dcp {
namespace {

__global__ void __launch_bounds__(kPressureThreads, 2)  // <= 32 registers: it needs few
    sm_pressure_kernel(PressureControl* ctl, uint32_t* device_words, uint64_t max_ns) {
  // Every thread stays to the end: a warp that exits gives its slots back
  // (a divergent __syncthreads would let all but thread 0's warp go).
  __shared__ int admitted, done;
  if (threadIdx.x == 0) {
    // Placed after the host stopped waiting (the SM was busy): leave at once,
    // so the pressure never grows past what was measured.
    admitted = ctl->closed == 0u ? 1 : 0;
    done = 0;
    if (admitted) {
      ctl->resident[blockIdx.x] = 1;
      __threadfence_system();
    }
  }
  __syncthreads();
  if (!admitted) return;
  const uint64_t start = global_timer_ns();
  volatile uint32_t* relay = device_words;
  // The first admitted block polls the host page; the others poll the relay.
  const bool poller = threadIdx.x == 0 && atomicCAS(device_words + 1, 0u, 1u) == 0u;
  while (true) {
    if (threadIdx.x == 0) {
      if (global_timer_ns() - start >= max_ns) {
        done = 1;
      } else if (poller) {
        if (ctl->stop != 0u) *relay = 1u, done = 1;
      } else if (*relay != 0u) {
        done = 1;
      }
    }
    __syncthreads();
    if (done) break;
    __nanosleep(poller ? 10000 : 5000);
    __syncthreads();  // no thread reads `done` while thread 0 may write it
  }
}

// words: [0] arrived, [1] most live at once, [2] live now.
__global__ void __launch_bounds__(kPressureThreads)
    capacity_probe_kernel(uint32_t* words, uint64_t window_ns) {
  if (threadIdx.x == 0) {
    atomicAdd(words, 1u);
    atomicMax(words + 1, atomicAdd(words + 2, 1u) + 1u);
    const uint64_t start = global_timer_ns();
    volatile uint32_t* arrived = words;
    while (*arrived < gridDim.x && global_timer_ns() - start < window_ns) __nanosleep(1000);
    atomicSub(words + 2, 1u);
  }
  __syncthreads();
}

// A 1 KiB stack frame: a local array indexed at run time.
__global__ void local_memory_kernel(int index, int* sink) {
  volatile char frame[1024];
  for (int i = 0; i < 1024; i += 64) frame[(index + i) & 1023] = static_cast<char>(i);
  if (sink != nullptr && threadIdx.x == 0) *sink = frame[index & 1023];
}

}  // namespace

cudaError_t launch_local_memory_reserve(cudaStream_t stream) {
  local_memory_kernel<<<1, 32, 0, stream>>>(0, nullptr);
  return cudaGetLastError();
}

cudaError_t launch_capacity_probe(uint32_t* words, int blocks, uint64_t window_ns,
                                  cudaStream_t stream) {
  if (words == nullptr || blocks < 1 || blocks > kMaxPressureBlocks) return cudaErrorInvalidValue;
  capacity_probe_kernel<<<blocks, kPressureThreads, 0, stream>>>(words, window_ns);
  return cudaGetLastError();
}

cudaError_t launch_sm_pressure(PressureControl* control_dev, uint32_t* device_words, int blocks,
                               uint64_t max_ns, int shared_bytes, cudaStream_t stream) {
  if (control_dev == nullptr || device_words == nullptr || blocks < 1 ||
      blocks > kMaxPressureBlocks || max_ns == 0 || shared_bytes < 0) {
    return cudaErrorInvalidValue;
  }
  sm_pressure_kernel<<<blocks, kPressureThreads, static_cast<size_t>(shared_bytes), stream>>>(
      control_dev, device_words, max_ns);
  return cudaGetLastError();
}

cudaError_t set_sm_pressure_shared_limit(int* bytes) {
  cudaFuncAttributes attr{};
  if (cudaError_t err = cudaFuncGetAttributes(&attr, sm_pressure_kernel); err != cudaSuccess) {
    return err;
  }
  *bytes -= static_cast<int>(attr.sharedSizeBytes);  // the dynamic part may not exceed the rest
  return cudaFuncSetAttribute(sm_pressure_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              *bytes);
}

}  // namespace dcp
