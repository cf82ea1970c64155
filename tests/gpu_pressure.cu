// gpu_pressure: the SM-pressure kernel takes the SMs it says it takes. A probe
// grid of 1024-thread blocks, each staying 2 ms, finds how many of its blocks
// are resident at once: all of them on an idle GPU, at most the SMs left free
// (two blocks each) under 90% pressure, and all again after stop(); a kernel
// with a stack frame completes under pressure once local memory is kept
// sized (keep_local_memory); under MPS
// the share the context holds bounds all three. Exit 77
// (skipped, by name) without a GPU.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "sm_pressure_host.h"

namespace {

constexpr int kProbeBlocks = 128;

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// words[0]: blocks live now, words[1]: the most ever live at once.
__global__ void __launch_bounds__(1024) probe(unsigned* words, unsigned long long stay_ns) {
  if (threadIdx.x == 0) {
    const unsigned live = atomicAdd(words, 1u) + 1u;
    atomicMax(words + 1, live);
    const unsigned long long start = now_ns();
    while (now_ns() - start < stay_ns) {
      atomicMax(words + 1, *reinterpret_cast<volatile unsigned*>(words));
    }
    atomicSub(words, 1u);
  }
  __syncthreads();
}

// A kernel with a stack frame (the printf it never reaches), like a bounded
// wait's trap line: its launch may have to size local memory.
__global__ void stack_probe(int* out, int loud) {
  if (loud != 0) printf("stack probe %d\n", loud);
  if (threadIdx.x == 0) *out = 1;
}

// Seconds until a stack_probe on `s` completes.
double stack_probe_seconds(int* out, cudaStream_t s) {
  const auto start = std::chrono::steady_clock::now();
  stack_probe<<<1, 32, 0, s>>>(out, 0);
  if (cudaStreamSynchronize(s) != cudaSuccess) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int most_resident(unsigned* words, cudaStream_t s) {
  unsigned host[2] = {0, 0};
  if (cudaMemsetAsync(words, 0, sizeof host, s) != cudaSuccess) return -1;
  probe<<<kProbeBlocks, 1024, 0, s>>>(words, 2'000'000ull);
  if (cudaMemcpyAsync(host, words, sizeof host, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
      cudaStreamSynchronize(s) != cudaSuccess) {
    return -1;
  }
  return static_cast<int>(host[1]);
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("gpu_pressure: SKIPPED: no CUDA device\n");
    return 77;
  }
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    failures += ok ? 0 : 1;
  };
  try {
    dcp::SmPressure pressure(0, 0, 1.0);  // bound 3 s
    const int sms = pressure.rank_sms();
    cudaStream_t s = nullptr;
    unsigned* words = nullptr;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc(&words, 2 * sizeof(unsigned)) != cudaSuccess) {
      std::printf("gpu_pressure: FAIL: cannot create a stream or allocate\n");
      return 1;
    }
    const int fits = std::min(kProbeBlocks, 2 * sms);  // under MPS the share may be smaller
    const int idle = most_resident(words, s);
    std::printf("     this context holds %d SMs at once (measured); the device has %d\n", sms,
                pressure.device_sms());
    check(idle == fits, "idle GPU (" + std::to_string(sms) + " SMs): " +
                                    std::to_string(idle) + " of " +
                                    std::to_string(kProbeBlocks) + " probe blocks at once");
    const std::string note = pressure.start(90);
    std::printf("     %s\n", note.c_str());
    check(note.find(" 0 of ") == std::string::npos, "the pressure blocks became resident");
    const int free_sms = sms - (sms * 90 + 99) / 100;
    const int under = most_resident(words, s);
    check(under >= 1 && under <= 2 * free_sms,
          "under 90% pressure: " + std::to_string(under) + " probe blocks at once (at most " +
              std::to_string(2 * free_sms) + ": two per free SM)");
    // Local memory: without keep_local_memory() a kernel with a stack frame
    // launched under pressure may wait for the pressure kernel (its bound is
    // 3 s here); with it, it must not.
    int* out = nullptr;
    if (cudaMalloc(&out, sizeof(int)) != cudaSuccess) {
      std::printf("gpu_pressure: FAIL: cannot allocate\n");
      return 1;
    }
    std::printf("     note: a kernel with a stack frame under pressure, before "
                "keep_local_memory(): %.3f s\n",
                stack_probe_seconds(out, s));
    pressure.stop();
    dcp::keep_local_memory(0);
    std::printf("     %s\n", pressure.start(90).c_str());
    const double with_kept = stack_probe_seconds(out, s);
    check(with_kept >= 0 && with_kept < 0.5,
          "a kernel with a stack frame under pressure, local memory kept: " +
              std::to_string(with_kept) + " s (the pressure's bound is 3 s)");
    pressure.stop();
    cudaFree(out);
    const int after = most_resident(words, s);
    check(after == fits, "after stop(): " + std::to_string(after) + " at once again");
    check(!pressure.running(), "stop() ended the pressure kernel");
  } catch (const std::exception& e) {
    std::printf("gpu_pressure: FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("== gpu_pressure: %s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
