// The stock path's transport for the GPU backend: one NCCL communicator per
// DCP group, persistent send/receive buffers sized for max_tokens, and the
// enqueue of pack -> grouped NCCL send/recv -> combine on one stream
// (capturable in a CUDA graph).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda_raii.h"
#include "nccl_loader.h"
#include "rendezvous.h"
#include "stock_a2a.h"

namespace dcp {

struct StockConfig {
  int global_rank = 0;
  int group_rank = 0;
  std::vector<int> members;  // global ranks, ascending
  int device = 0;
  int max_tokens = 0;
  int heads_per_rank = 0;
  int head_dim = 0;
  std::string key_prefix;  // unique per group: names the rendezvous exchanges
};

class StockTransport {
 public:
  // Collective over the group. Throws UsageError when NCCL cannot be loaded or
  // when ranks of the group share a GPU (NCCL refuses that), HarnessError for
  // other failures.
  StockTransport(const StockConfig& cfg, Rendezvous& rendezvous);
  ~StockTransport();
  StockTransport(const StockTransport&) = delete;
  StockTransport& operator=(const StockTransport&) = delete;

  // Fills both kernels' params for one call on T tokens (pointers into this
  // transport's send/receive buffers).
  void fill_params(int num_tokens, const void* partial_output, const void* partial_lse,
                   int64_t out_stride, int64_t lse_stride, ElemType out, ElemType lse, bool base_e,
                   const int32_t* seq_lens, const int32_t* query_start_loc, int num_seqs,
                   void* output, StockPackParams* pack, StockCombineParams* combine) const;

  // pack -> NCCL all-to-all of payload and LSE -> combine, on `stream`.
  // Throws KernelFault when a launch or an NCCL call fails.
  void enqueue(const StockPackParams& pack, const StockCombineParams& combine, cudaStream_t stream);

 private:
  StockConfig cfg_;
  std::shared_ptr<NcclLibrary> nccl_;
  ncclComm_t comm_ = nullptr;
  DeviceBuffer send_out_, recv_out_, send_lse_, recv_lse_;
};

}  // namespace dcp
