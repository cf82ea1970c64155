#include "input_producer.h"

#include <algorithm>

namespace dcp {
namespace {

// One thread per element (grid-stride): each element is one stream step and
// two roundings, so the whole kimi T=128 buffer (4 Mi elements) takes
// microseconds.
__global__ void input_producer_kernel(OutputRecipe r, uint16_t* out) {
  const int64_t n = static_cast<int64_t>(r.num_tokens) * r.token_stride;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const auto t = static_cast<int>(i / r.token_stride);
    out[i] = recipe_bits(r, t, i - static_cast<int64_t>(t) * r.token_stride);
  }
}

}  // namespace

cudaError_t launch_input_producer(const OutputRecipe& r, void* partial_output,
                                  cudaStream_t stream) {
  if (partial_output == nullptr || r.token_normal == nullptr || r.num_tokens < 1 ||
      r.heads < 1 || r.head_dim < 1 || r.token_stride < static_cast<int64_t>(r.heads) * r.head_dim) {
    return cudaErrorInvalidValue;
  }
  constexpr int kThreads = 256;
  const int64_t n = static_cast<int64_t>(r.num_tokens) * r.token_stride;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 4096));
  input_producer_kernel<<<blocks, kThreads, 0, stream>>>(r, static_cast<uint16_t*>(partial_output));
  return cudaGetLastError();
}

}  // namespace dcp
