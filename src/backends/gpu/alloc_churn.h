// Allocation churn around captured graphs (Case::churn; vLLM #45487: a graph
// keeps the addresses it was captured with, and memory freed after the capture
// is handed out again). After each capture the previous blocks are freed and
// new ones allocated and filled with the canary: one with cudaMalloc as large
// as the call's buffers, and from the device's stream-ordered pool
// (cudaMallocAsync: what a framework allocator built on it hands out) every
// free byte the pool holds, in halving blocks: a block a kernel gave back to
// the pool is handed to churn. A graph that still writes a block it freed
// damages a canary; damage() finds it after the batch.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

namespace dcp {

class AllocChurn {
 public:
  static constexpr size_t kMaxBytes = size_t{64} << 20;  // per block, and the ladder's top
  static constexpr size_t kMinBytes = size_t{4} << 10;   // the smallest pool block
  static constexpr int kMaxPoolBlocks = 64;

  AllocChurn() = default;
  ~AllocChurn() { release(nullptr); }
  AllocChurn(const AllocChurn&) = delete;
  AllocChurn& operator=(const AllocChurn&) = delete;

  // Frees the previous blocks and allocates new ones for a call of
  // `call_bytes`, filled with the canary on `s` (before the replays that follow).
  cudaError_t after_capture(size_t call_bytes, cudaStream_t s);
  // Appends one line per damaged block (refilled on `s`); the copies back
  // synchronise `s`.
  cudaError_t damage(cudaStream_t s, std::vector<std::string>* out);
  // Frees every block (on `s`, or synchronously when null).
  cudaError_t release(cudaStream_t s);
  bool empty() const { return blocks_.empty(); }

 private:
  struct Block {
    void* ptr = nullptr;
    size_t bytes = 0;
    bool pooled = false;  // cudaMallocAsync (else cudaMalloc)
  };
  std::vector<Block> blocks_;
};

}  // namespace dcp
