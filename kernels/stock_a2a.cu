// The stock path's pack and combine kernels (see stock_a2a.h). The combine is
// the direct path's row combine (combine_device.cuh) over the NCCL receive
// buffers, so both paths share one arithmetic and differ only in transport.
#include <algorithm>

#include "combine_device.cuh"
#include "stock_a2a.h"

namespace dcp {
namespace {

constexpr int kCombineThreads = 256;
constexpr int kWarpsPerCombineBlock = kCombineThreads / 32;
constexpr int kMaxCombineBlocks = 128;  // nothing spins here: no co-residency limit
constexpr int kMaxPackBlocksPerDest = 32;

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// Block (x, d) packs tokens x, x + gridDim.x, ... of destination d's slice.
// Rows of empty KV shards publish LSE -inf and skip the payload: the combine
// never reads a zero-weight row.
template <ElemType kLse>
__global__ void __launch_bounds__(256) stock_pack_kernel(const StockPackParams p) {
  const int H = p.heads_per_rank, D = p.head_dim, T = p.num_tokens;
  const int d = blockIdx.y;
  const int vecs_per_row = H * D / device::kVecElems;
  for (int t = blockIdx.x; t < T; t += gridDim.x) {
    const bool masked = math::token_masked(p.seq_lens, p.query_start_loc, p.num_seqs, t);
    const int64_t dst_row = int64_t{d} * T + t;
    if (!masked) {
      const uint4* src =
          reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.partial_output) +
                                         t * p.out_token_stride + int64_t{d} * H * D);
      uint4* dst = reinterpret_cast<uint4*>(static_cast<uint16_t*>(p.send_out) + dst_row * H * D);
      for (int i = threadIdx.x; i < vecs_per_row; i += blockDim.x) dst[i] = __ldg(src + i);
    }
    for (int h = threadIdx.x; h < H; h += blockDim.x) {
      p.send_lse[dst_row * H + h] =
          masked ? math::neg_inf()
                 : device::load_lse_base2<kLse>(p.partial_lse,
                                                t * p.lse_token_stride + int64_t{d} * H + h,
                                                p.lse_base_e != 0, false);
    }
  }
}

template <ElemType kOut>
__global__ void __launch_bounds__(kCombineThreads)
    stock_combine_kernel(const StockCombineParams p) {
  const int H = p.heads_per_rank, D = p.head_dim, T = p.num_tokens;
  device::CombineView v;
  v.out_src = static_cast<const uint16_t*>(p.recv_out);
  v.out_src_stride = int64_t{T} * H * D;
  v.lse_src = p.recv_lse;
  v.lse_src_stride = int64_t{T} * H;
  v.num_sources = p.dcp_size;
  v.num_tokens = T;
  v.heads = H;
  v.head_dim = D;
  v.output = static_cast<uint16_t*>(p.output);
  const int warp = threadIdx.x / 32;
  device::combine_rows<kOut, false>(v, blockIdx.x * kWarpsPerCombineBlock + warp,
                                    gridDim.x * kWarpsPerCombineBlock, kMutantNone);
}

std::string validate_shape(ElemType out_dtype, int W, int H, int D, int T) {
  if (out_dtype != ElemType::kFp16 && out_dtype != ElemType::kBf16) {
    return "output dtype must be fp16 or bf16";
  }
  if (W < 1 || W > kMaxDcpSize) return "dcp size must be in [1, 8]";
  if (H < 1) return "heads per rank must be >= 1";
  if (D < 8 || D % 8 != 0) return "head dim must be a positive multiple of 8";
  if (T < 1) return "tokens must be >= 1";
  return "";
}

}  // namespace

size_t StockLayout::out_chunk_bytes() const {
  return size_t{2} * num_tokens * heads_per_rank * head_dim;
}
size_t StockLayout::lse_chunk_bytes() const { return size_t{4} * num_tokens * heads_per_rank; }

std::string validate_stock_pack(const StockPackParams& p) {
  const int W = p.dcp_size, H = p.heads_per_rank, D = p.head_dim;
  if (std::string e = validate_shape(p.out_dtype, W, H, D, p.num_tokens); !e.empty()) return e;
  if (p.lse_dtype != ElemType::kFp32 && p.lse_dtype != ElemType::kFp16 &&
      p.lse_dtype != ElemType::kBf16) {
    return "LSE dtype must be fp32, fp16 or bf16";
  }
  if (p.out_token_stride < int64_t{W} * H * D || p.out_token_stride % 8 != 0) {
    return "output token stride must be >= W*H*D and a multiple of 8 elements";
  }
  if (p.lse_token_stride < int64_t{W} * H) return "LSE token stride must be >= W*H";
  if (p.partial_output == nullptr || p.partial_lse == nullptr || p.send_out == nullptr ||
      p.send_lse == nullptr) {
    return "null pointer";
  }
  if (!aligned16(p.partial_output) || !aligned16(p.send_out)) return "misaligned payload buffer";
  if ((p.seq_lens == nullptr) != (p.query_start_loc == nullptr)) {
    return "seq_lens and query_start_loc must be given together";
  }
  if (p.seq_lens != nullptr && p.num_seqs < 1) return "num_seqs must be >= 1 with seq_lens";
  return "";
}

std::string validate_stock_combine(const StockCombineParams& p) {
  if (std::string e =
          validate_shape(p.out_dtype, p.dcp_size, p.heads_per_rank, p.head_dim, p.num_tokens);
      !e.empty()) {
    return e;
  }
  if (p.recv_out == nullptr || p.recv_lse == nullptr || p.output == nullptr) return "null pointer";
  if (!aligned16(p.recv_out) || !aligned16(p.output)) return "misaligned payload buffer";
  return "";
}

cudaError_t launch_stock_pack(const StockPackParams& p, cudaStream_t stream) {
  if (!validate_stock_pack(p).empty()) return cudaErrorInvalidValue;
  const int vecs_per_row = p.heads_per_rank * p.head_dim / device::kVecElems;
  const int threads = std::min(256, std::max(64, (vecs_per_row + 31) / 32 * 32));
  const dim3 grid(std::min(p.num_tokens, kMaxPackBlocksPerDest), p.dcp_size);
  switch (p.lse_dtype) {
    case ElemType::kFp32:
      stock_pack_kernel<ElemType::kFp32><<<grid, threads, 0, stream>>>(p);
      break;
    case ElemType::kFp16:
      stock_pack_kernel<ElemType::kFp16><<<grid, threads, 0, stream>>>(p);
      break;
    case ElemType::kBf16:
      stock_pack_kernel<ElemType::kBf16><<<grid, threads, 0, stream>>>(p);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_stock_combine(const StockCombineParams& p, cudaStream_t stream) {
  if (!validate_stock_combine(p).empty()) return cudaErrorInvalidValue;
  const int rows = p.num_tokens * p.heads_per_rank;
  const int blocks =
      std::min(kMaxCombineBlocks, (rows + kWarpsPerCombineBlock - 1) / kWarpsPerCombineBlock);
  switch (p.out_dtype) {
    case ElemType::kFp16:
      stock_combine_kernel<ElemType::kFp16><<<blocks, kCombineThreads, 0, stream>>>(p);
      break;
    case ElemType::kBf16:
      stock_combine_kernel<ElemType::kBf16><<<blocks, kCombineThreads, 0, stream>>>(p);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace dcp
