// The stock path's device pieces, host-side view. Plain C++. The
// stock path is: pack (this kernel) -> NCCL all-to-all of both buffers
// (src/, grouped send/recv, one communicator per DCP group) -> combine (this
// kernel). It computes exactly what the direct path computes (SPEC section 1),
// through a collective instead of one-sided writes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "combine_math.h"

namespace dcp {

// Send/receive layouts (identical): payload [W][T][H][D] in the out dtype,
// LSE [W][T][H] fp32 base 2 with masked rows -inf. Chunk d of the send
// buffers goes to group rank d; chunk s of the receive buffers came from s.
struct StockLayout {
  int dcp_size = 0;
  int num_tokens = 0;
  int heads_per_rank = 0;
  int head_dim = 0;
  size_t out_chunk_bytes() const;  // one peer's payload: T*H*D 16-bit elements
  size_t lse_chunk_bytes() const;  // one peer's LSE: T*H fp32
};

struct StockPackParams {
  const void* partial_output;  // [T, W*H, D]
  const void* partial_lse;     // [T, W*H]
  int64_t out_token_stride;    // elements, multiple of 8, >= W*H*D
  int64_t lse_token_stride;    // elements, >= W*H
  ElemType out_dtype;          // kFp16 or kBf16
  ElemType lse_dtype;          // kFp32, kFp16 or kBf16
  uint8_t lse_base_e;
  int32_t num_tokens;
  int32_t dcp_size;
  int32_t heads_per_rank;
  int32_t head_dim;
  const int32_t* seq_lens;  // optional masking, as in DirectA2AParams
  const int32_t* query_start_loc;
  int32_t num_seqs;
  void* send_out;   // [W][T][H][D]
  float* send_lse;  // [W][T][H]
};

struct StockCombineParams {
  const void* recv_out;   // [W][T][H][D]
  const float* recv_lse;  // [W][T][H]
  ElemType out_dtype;
  int32_t num_tokens;
  int32_t dcp_size;
  int32_t heads_per_rank;
  int32_t head_dim;
  void* output;  // [T, H, D]
};

// Empty when launchable, else one line naming the problem.
std::string validate_stock_pack(const StockPackParams& p);
std::string validate_stock_combine(const StockCombineParams& p);

// Capturable launches (no allocation, no host sync); cudaErrorInvalidValue
// when validation fails.
cudaError_t launch_stock_pack(const StockPackParams& p, cudaStream_t stream);
cudaError_t launch_stock_combine(const StockCombineParams& p, cudaStream_t stream);

}  // namespace dcp
