// gpu_pressure: the SM-pressure kernel takes the SMs it says it takes, and
// only those. A probe grid of 1024-thread blocks, each staying 2 ms, finds
// how many of its blocks are resident at once: all of them on an idle GPU,
// at most the SMs left free (two blocks each) under 90% pressure, and all
// again after stop(). Under pressure the first kernel launched after start()
// completes at once whatever its block size (with two 1024-thread pressure
// blocks per SM, blocks of fewer than 256 threads waited for the pressure to
// end: docs/DESIGN.md, "SM pressure"), so does this process's first kernel
// with a stack frame (local memory is reserved first), and so do the other steps of a
// worker's call (memset, copies to and from pinned and pageable memory).
// Under MPS the share the context holds bounds everything. Exit 77
// (skipped, by name) without a GPU.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_test_prologue.h"
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

__global__ void grid_probe(int* out) {
  if (threadIdx.x == 0) atomicAdd(out, 1);
}

// The first kernel of this process with a stack frame (512 bytes).
__global__ void stack_probe(int* out, int index) {
  volatile int frame[128];
  for (int i = 0; i < 128; ++i) frame[(index + i) & 127] = i;
  if (threadIdx.x == 0) *out = frame[index & 127];
}

// Seconds from issuing `op` on `s` to its completion (-1 on an error).
template <class Op>
double seconds_of(cudaStream_t s, Op op) {
  const auto start = std::chrono::steady_clock::now();
  if (op() != cudaSuccess || cudaStreamSynchronize(s) != cudaSuccess) return -1;
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

std::string seconds_text(double sec) { return std::to_string(sec) + " s"; }

}  // namespace

int main() {
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);  // as the workers: no lazy first launch under pressure
  if (dcp::skip_without_gpu("gpu_pressure")) return 77;
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    failures += ok ? 0 : 1;
  };
  try {
    dcp::SmPressure pressure(0, 0, 1.0);  // bound 3 s: a step that waits for it takes 3 s
    const int sms = pressure.rank_sms();
    cudaStream_t s = nullptr;
    unsigned* words = nullptr;
    int* out = nullptr;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc(&words, 2 * sizeof(unsigned)) != cudaSuccess ||
        cudaMalloc(&out, sizeof(int)) != cudaSuccess) {
      std::printf("gpu_pressure: FAIL: cannot create a stream or allocate\n");
      return 1;
    }
    const int fits = std::min(kProbeBlocks, 2 * sms);  // under MPS the share may be smaller
    const int idle = most_resident(words, s);
    std::printf("     this context holds %d SMs at once (measured); the device has %d\n", sms,
                pressure.device_sms());
    check(idle == fits, "idle GPU (" + std::to_string(sms) + " SMs): " + std::to_string(idle) +
                            " of " + std::to_string(kProbeBlocks) + " probe blocks at once");
    const std::string note = pressure.start(90);
    std::printf("     %s\n", note.c_str());
    check(note.find(" 0 of ") == std::string::npos, "the pressure blocks became resident");
    const int free_sms = sms - std::min((sms * 90 + 99) / 100, sms - 1);  // as SmPressure::start
    const int under = most_resident(words, s);
    check(under >= 1 && under <= 2 * free_sms,
          "under 90% pressure: " + std::to_string(under) + " probe blocks at once (at most " +
              std::to_string(2 * free_sms) + ": two per free SM)");
    pressure.stop();

    // SmPressure reserved local memory: a first kernel with a stack frame
    // need not grow it (which waits for every running kernel).
    pressure.start(90);
    const double stack = seconds_of(s, [&] {
      stack_probe<<<1, 32, 0, s>>>(out, 3);
      return cudaGetLastError();
    });
    pressure.stop();
    check(stack >= 0 && stack < 0.5,
          "under 90% pressure, this process's first kernel with a stack frame: " + seconds_text(stack));

    // Each grid is the first kernel under a fresh pressure.
    struct Grid { int percent, blocks, threads; };
    const Grid grids[] = {{90, 1, 1},   {90, 1, 32},   {90, 1, 64}, {90, 1, 128},
                          {90, 1, 256}, {90, 13, 32},  {90, 1, 1024}, {50, 1, 32}};
    for (const Grid& g : grids) {
      pressure.start(g.percent);
      const double sec = seconds_of(s, [&] {
        grid_probe<<<g.blocks, g.threads, 0, s>>>(out);
        return cudaGetLastError();
      });
      pressure.stop();
      check(sec >= 0 && sec < 0.5, "under " + std::to_string(g.percent) +
                                       "% pressure, a first kernel of " + std::to_string(g.blocks) +
                                       " x " + std::to_string(g.threads) + ": " + seconds_text(sec));
    }

    // The other steps of a worker's call, each alone under pressure.
    constexpr size_t kBytes = size_t{4} << 20;
    std::vector<unsigned char> pageable(kBytes, 1);
    void* pinned = nullptr;
    void* dev = nullptr;
    if (cudaMallocHost(&pinned, kBytes) != cudaSuccess || cudaMalloc(&dev, kBytes) != cudaSuccess) {
      std::printf("gpu_pressure: FAIL: cannot allocate\n");
      return 1;
    }
    pressure.start(90);
    const std::pair<const char*, double> steps[] = {
        {"cudaMemsetAsync 4 MiB",
         seconds_of(s, [&] { return cudaMemsetAsync(dev, 0xFF, kBytes, s); })},
        {"cudaMemcpyAsync 4 MiB from pinned",
         seconds_of(s, [&] { return cudaMemcpyAsync(dev, pinned, kBytes, cudaMemcpyHostToDevice, s); })},
        {"cudaMemcpyAsync 4 MiB to pinned",
         seconds_of(s, [&] { return cudaMemcpyAsync(pinned, dev, kBytes, cudaMemcpyDeviceToHost, s); })},
        {"cudaMemcpyAsync 4 MiB from pageable",
         seconds_of(s, [&] {
           return cudaMemcpyAsync(dev, pageable.data(), kBytes, cudaMemcpyHostToDevice, s);
         })},
        {"cudaMemcpyAsync 4 MiB to pageable",
         seconds_of(s, [&] {
           return cudaMemcpyAsync(pageable.data(), dev, kBytes, cudaMemcpyDeviceToHost, s);
         })},
    };
    pressure.stop();
    for (const auto& [what, sec] : steps) {
      check(sec >= 0 && sec < 0.5, std::string(what) + " under pressure: " + seconds_text(sec));
    }
    cudaFreeHost(pinned);
    cudaFree(dev);
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
