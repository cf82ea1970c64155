#include "canary_scan.h"

#include <algorithm>

namespace dcp {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;  // grid-stride beyond

// Bytes of `v` that differ from the canary repeated in `pattern`, and the
// lowest one's index (little-endian: byte 0 is the lowest address) or 4.
__device__ void word_diff(uint32_t v, uint32_t pattern, unsigned& count, unsigned& first) {
  const uint32_t ne = __vcmpne4(v, pattern);  // 0xFF in each differing byte
  count = __popc(ne) / 8;
  first = ne == 0 ? 4 : (__ffs(ne) - 1) / 8;
}

__global__ void canary_scan(const uint8_t* data, size_t bytes, uint8_t canary, CanaryScan* out) {
  const uint32_t pattern = 0x01010101u * canary;
  const size_t vectors = bytes / 16;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t start = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned long long changed = 0, first = ~0ull;
  for (size_t i = start; i < vectors; i += stride) {
    const uint4 v = reinterpret_cast<const uint4*>(data)[i];
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
    for (int k = 0; k < 4; ++k) {
      unsigned count, at;
      word_diff(words[k], pattern, count, at);
      changed += count;
      if (count > 0 && first == ~0ull) first = i * 16 + k * 4 + at;
    }
  }
  // The bytes past the last whole vector, one per thread.
  const size_t tail = vectors * 16 + start;
  if (tail < bytes && data[tail] != canary) {
    ++changed;
    first = first == ~0ull ? tail : first;  // a thread's vectors all precede its tail byte
  }
  if (changed > 0) {  // rare: the canary held is the common case
    atomicAdd(&out->changed, changed);
    atomicMin(&out->first, first);
  }
}

}  // namespace

cudaError_t launch_canary_scan(const void* data, size_t bytes, uint8_t canary, CanaryScan* result,
                               cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(&result->changed, 0, sizeof result->changed, stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(&result->first, 0xFF, sizeof result->first, stream);
  if (err != cudaSuccess || bytes == 0) return err;
  const size_t threads_needed = bytes / 16 + 1;
  const int blocks =
      static_cast<int>(std::min<size_t>(kMaxBlocks, (threads_needed + kThreads - 1) / kThreads));
  canary_scan<<<blocks, kThreads, 0, stream>>>(static_cast<const uint8_t*>(data), bytes, canary,
                                               result);
  return cudaGetLastError();
}

}  // namespace dcp
