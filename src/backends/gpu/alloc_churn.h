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

struct CanaryScan;  // canary_scan.h

class AllocChurn {
 public:
  static constexpr size_t kMaxBytes = size_t{64} << 20;  // per block, and the ladder's top
  static constexpr size_t kMinBytes = size_t{4} << 10;   // the smallest pool block
  static constexpr int kMaxPoolBlocks = 64;

  AllocChurn() = default;
  ~AllocChurn() {  // the backend syncs its streams first
    release(nullptr);
    if (scans_ != nullptr) cudaFree(scans_);
  }
  AllocChurn(const AllocChurn&) = delete;
  AllocChurn& operator=(const AllocChurn&) = delete;

  // Allocates new blocks for a call of `call_bytes`, filled with the canary
  // on `s` (before the replays that follow); the previous ones are retired,
  // still checked by the next damage() and freed only after it.
  cudaError_t after_capture(size_t call_bytes, cudaStream_t s);
  // Once every stream is idle: appends one line per damaged block, live or
  // retired (each damaged one refilled), then frees the retired ones. The
  // blocks are compared on the device; uses and synchronises `s`.
  cudaError_t damage(cudaStream_t s, std::vector<std::string>* out);
  // Frees every block, live and retired (ordered on `s`; every stream that
  // used them must be idle).
  cudaError_t release(cudaStream_t s);
  bool empty() const { return blocks_.empty() && retired_.empty(); }

 private:
  struct Block {
    void* ptr = nullptr;
    size_t bytes = 0;
    bool pooled = false;  // cudaMallocAsync (else cudaMalloc)
  };
  static cudaError_t free_blocks(std::vector<Block>& blocks, cudaStream_t s);
  std::vector<Block> blocks_;   // from the last capture
  std::vector<Block> retired_;  // from earlier captures, not checked since
  CanaryScan* scans_ = nullptr;  // damage()'s verdicts, one per block (device)
  size_t scan_capacity_ = 0;
};

}  // namespace dcp
