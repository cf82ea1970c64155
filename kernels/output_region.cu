#include "output_region.h"

#include <algorithm>

namespace dcp {
namespace {

// Word i of the region: the canary in a guard, else poison.
__global__ void fill_output_region_kernel(uint32_t* base, size_t words, size_t guard_words,
                                          size_t out_words, size_t lse_words, uint32_t canary) {
  const size_t out_end = guard_words + out_words;  // the second guard starts here
  const size_t lse_begin = out_end + guard_words, lse_end = lse_begin + lse_words;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const bool poison = (i >= guard_words && i < out_end) || (i >= lse_begin && i < lse_end);
    base[i] = poison ? 0xFFFFFFFFu : canary;
  }
}

}  // namespace

cudaError_t launch_fill_output_region(const OutputRegion& r, uint8_t canary, cudaStream_t stream) {
  if (reinterpret_cast<uintptr_t>(r.base) % 4 != 0 || r.guard_bytes % 4 != 0 ||
      r.out_bytes % 4 != 0 || r.lse_bytes % 4 != 0) {
    return cudaErrorInvalidValue;
  }
  const size_t words = r.total_bytes() / 4;
  if (words == 0) return cudaSuccess;
  const int threads = 256;
  const auto blocks = static_cast<int>(std::min<size_t>((words + threads - 1) / threads, 1024));
  fill_output_region_kernel<<<blocks, threads, 0, stream>>>(
      static_cast<uint32_t*>(r.base), words, r.guard_bytes / 4, r.out_bytes / 4, r.lse_bytes / 4,
      canary * 0x01010101u);
  return cudaGetLastError();
}

}  // namespace dcp
