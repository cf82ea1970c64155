// gpu_sm_reach: a probe, not a test (ci/gpu.sh smreach). How many SMs one
// kernel reaches from this process: in the runtime's primary context, a plain
// driver context, and a driver context made with an execution-affinity SM
// count (argv[1], default every SM the process sees): could the device check
// have more SMs than the rank's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE share?
// (docs/DESIGN.md, "The check on the GPU": it cannot.)
// A grid of many short-lived blocks, each staying 200 us and marking the SM
// it ran on. Then what such a context can share with the primary one (the
// check would read the op's buffers there): the primary context's device
// memory, its pinned host memory, and an event of its stream. Prints one
// line per finding; exit 77 (skipped, by name) without a GPU, 1 on a CUDA
// error outside the sharing tests, else 0 whatever it measured.
#include <cuda.h>  // types only: the driver's functions come from the runtime
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "global_timer.cuh"
#include "gpu_test_prologue.h"

namespace {

constexpr int kMaskWords = 16;  // up to 512 SMs
constexpr int kBlocks = 2048;

__global__ void mark_sms(uint32_t* mask) {
  if (threadIdx.x == 0) {
    uint32_t sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    atomicOr(&mask[(sm / 32) % kMaskWords], 1u << (sm % 32));
    const uint64_t until = dcp::global_timer_ns() + 200'000;
    while (dcp::global_timer_ns() < until) {
    }
  }
}

// The SMs the current context's kernel reached; -1 on a CUDA error (printed).
int sms_reached(const char* where) {
  uint32_t* mask = nullptr;
  uint32_t host[kMaskWords] = {};
  cudaError_t err = cudaMalloc(&mask, sizeof host);
  if (err == cudaSuccess) err = cudaMemset(mask, 0, sizeof host);
  if (err == cudaSuccess) {
    mark_sms<<<kBlocks, 32>>>(mask);
    err = cudaGetLastError();
  }
  if (err == cudaSuccess) err = cudaMemcpy(host, mask, sizeof host, cudaMemcpyDeviceToHost);
  if (mask != nullptr) cudaFree(mask);
  if (err != cudaSuccess) {
    std::printf("FAIL: gpu_sm_reach: %s: %s\n", where, cudaGetErrorString(err));
    return -1;
  }
  int n = 0;
  for (uint32_t w : host) n += __builtin_popcount(w);
  return n;
}

// The driver's function `name` at CUDA 13.0's version of it, through the
// runtime (so the probe does not link libcuda and skips by name without a
// driver); null when the driver lacks it.
template <typename Fn>
Fn* driver_fn(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 13000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    return nullptr;
  }
  return reinterpret_cast<Fn*>(fn);
}

__global__ void sum_words(const uint32_t* in, int n, uint32_t* out) {
  uint32_t s = 0;
  for (int i = 0; i < n; ++i) s += in[i];
  *out = s;
}

__global__ void fill_words(uint32_t* p, int n, uint32_t v) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] = v;
}

const char* verdict(cudaError_t err, bool right) {
  return err != cudaSuccess ? cudaGetErrorName(err) : right ? "yes" : "no (wrong values)";
}

// In the current (affinity) context: does it reach what the primary context
// made? `device` holds kWords words of 3, `pinned` is the primary's
// cudaMallocHost memory (default flags), `done` an event its stream recorded.
constexpr int kWords = 256;
void probe_sharing(const uint32_t* device, uint32_t* pinned, cudaEvent_t done) {
  cudaStream_t s = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(s, done, 0);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s);
  std::printf("affinity context waits on the primary's event: %s\n", verdict(err, true));
  uint32_t* own = nullptr;
  err = cudaMalloc(&own, sizeof(uint32_t));
  if (err == cudaSuccess) {
    *pinned = 0;
    fill_words<<<1, 32, 0, s>>>(pinned, 1, 42);
    err = cudaGetLastError();
    if (err == cudaSuccess) err = cudaStreamSynchronize(s);
    std::printf("affinity context writes the primary's pinned host memory: %s\n",
                verdict(err, *pinned == 42));
    sum_words<<<1, 1, 0, s>>>(device, kWords, own);
    err = cudaGetLastError();
    uint32_t sum = 0;
    if (err == cudaSuccess) err = cudaStreamSynchronize(s);
    if (err == cudaSuccess) err = cudaMemcpy(&sum, own, sizeof sum, cudaMemcpyDeviceToHost);
    std::printf("affinity context reads the primary's device memory: %s\n",
                verdict(err, sum == 3u * kWords));
    cudaFree(own);
  }
}

}  // namespace

int main(int argc, char** argv) {  // argv[1]: the SMs to ask for (default: all it sees)
  if (dcp::skip_without_gpu("gpu_sm_reach")) return 77;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) return 1;
  const int primary = sms_reached("primary context");
  if (primary < 0) return 1;
  std::printf("primary context: %d of %d SMs reached\n", primary, sms);
  auto* device_get = driver_fn<decltype(cuDeviceGet)>("cuDeviceGet");
  auto* affinity_support =
      driver_fn<decltype(cuDeviceGetExecAffinitySupport)>("cuDeviceGetExecAffinitySupport");
  auto* ctx_create = driver_fn<decltype(cuCtxCreate_v4)>("cuCtxCreate");
  auto* ctx_affinity = driver_fn<decltype(cuCtxGetExecAffinity)>("cuCtxGetExecAffinity");
  auto* ctx_destroy = driver_fn<decltype(cuCtxDestroy_v2)>("cuCtxDestroy");
  auto* error_name = driver_fn<decltype(cuGetErrorName)>("cuGetErrorName");
  if (!device_get || !affinity_support || !ctx_create || !ctx_affinity || !ctx_destroy ||
      !error_name) {
    std::printf("FAIL: gpu_sm_reach: the driver lacks a function this probe needs\n");
    return 1;
  }
  CUdevice dev = 0;
  int supported = 0;
  if (device_get(&dev, 0) != CUDA_SUCCESS ||
      affinity_support(&supported, CU_EXEC_AFFINITY_TYPE_SM_COUNT, dev) != CUDA_SUCCESS) {
    std::printf("FAIL: gpu_sm_reach: cuDeviceGetExecAffinitySupport\n");
    return 1;
  }
  if (supported == 0) {
    std::printf("affinity context: not supported here (execution affinity needs MPS)\n");
    return 0;
  }
  // The primary context's buffers and event, for probe_sharing.
  uint32_t* device = nullptr;
  uint32_t* pinned = nullptr;
  cudaEvent_t done = nullptr;
  if (cudaMalloc(&device, kWords * sizeof(uint32_t)) != cudaSuccess ||
      cudaMallocHost(&pinned, sizeof(uint32_t)) != cudaSuccess ||
      cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess) {
    std::printf("FAIL: gpu_sm_reach: the primary context's buffers\n");
    return 1;
  }
  fill_words<<<1, 256>>>(device, kWords, 3);
  if (cudaEventRecord(done, nullptr) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("FAIL: gpu_sm_reach: filling the primary context's buffer\n");
    return 1;
  }
  // A plain driver context (no affinity): does the share bind it too?
  CUcontext plain = nullptr;
  if (ctx_create(&plain, nullptr, 0, dev) == CUDA_SUCCESS) {
    const int n = sms_reached("plain context");
    ctx_destroy(plain);
    std::printf("plain driver context: %d of %d SMs reached\n", n, sms);
  }
  CUexecAffinityParam affinity{};
  affinity.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
  const int ask = argc > 1 ? std::atoi(argv[1]) : sms;
  affinity.param.smCount.val = static_cast<unsigned>(ask);
  CUctxCreateParams params{};
  params.execAffinityParams = &affinity;
  params.numExecAffinityParams = 1;
  CUcontext ctx = nullptr;
  const CUresult made = ctx_create(&ctx, &params, 0, dev);
  if (made != CUDA_SUCCESS) {
    const char* name = nullptr;
    error_name(made, &name);
    std::printf("affinity context (asked %d SMs): not made: %s\n", ask, name ? name : "?");
    return 0;
  }
  CUexecAffinityParam granted{};
  ctx_affinity(&granted, CU_EXEC_AFFINITY_TYPE_SM_COUNT);
  const int reached = sms_reached("affinity context");  // the runtime uses the current context
  if (reached >= 0) {
    std::printf("affinity context (asked %d SMs, granted %u): %d of %d SMs reached\n", ask,
                granted.param.smCount.val, reached, sms);
    probe_sharing(device, pinned, done);
  }
  ctx_destroy(ctx);
  if (reached < 0) return 1;
  return 0;
}
