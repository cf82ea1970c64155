#include "input_producer.h"

#include <algorithm>

#include "global_timer.cuh"

namespace dcp {
namespace {

// Elements [t0, t1) token rows of both inputs, by thread `first` of `step`.
__device__ void write_rows(const SlowProducerParams& p, int t0, int t1, int64_t first,
                           int64_t step) {
  const int64_t stride = p.recipe.token_stride;
  for (int64_t i = int64_t{t0} * stride + first; i < int64_t{t1} * stride; i += step) {
    const auto t = static_cast<int>(i / stride);
    p.partial_output[i] = recipe_bits(p.recipe, t, i - int64_t{t} * stride);
  }
  for (int64_t i = int64_t{t0} * p.lse_row_bytes + first; i < int64_t{t1} * p.lse_row_bytes;
       i += step) {
    p.partial_lse[i] = p.lse_src[i];
  }
}

__global__ void slow_input_producer_kernel(const SlowProducerParams* params, int trigger_early) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (trigger_early) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const SlowProducerParams p = *params;
  const int last = p.recipe.num_tokens - 1;
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0) {
      const uint64_t start = global_timer_ns();
      while (global_timer_ns() - start < p.delay_ns) __nanosleep(256);
    }
    __syncthreads();
    write_rows(p, last, last + 1, threadIdx.x, blockDim.x);
    return;
  }
  write_rows(p, 0, last, (blockIdx.x - 1) * int64_t{blockDim.x} + threadIdx.x,
             (gridDim.x - 1) * int64_t{blockDim.x});
}

}  // namespace

cudaError_t launch_slow_input_producer(const SlowProducerParams* params, int num_tokens,
                                       int64_t token_stride, bool trigger_early,
                                       cudaStream_t stream) {
  if (params == nullptr || num_tokens < 1 || token_stride < 1) return cudaErrorInvalidValue;
  constexpr int kThreads = 256;
  const int64_t early = static_cast<int64_t>(num_tokens - 1) * token_stride;
  const auto blocks =
      1 + static_cast<unsigned>(std::min<int64_t>((early + kThreads - 1) / kThreads, 1024));
  slow_input_producer_kernel<<<blocks, kThreads, 0, stream>>>(params, trigger_early ? 1 : 0);
  return cudaGetLastError();
}

}  // namespace dcp
