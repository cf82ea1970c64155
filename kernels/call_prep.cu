#include "call_prep.h"

#include <algorithm>

namespace dcp {
namespace {

// partial_output (recipe_bits' values): its rows (t, head) a warp each,
// grid-strided, one draw per row and the elements read from the value table
// (recipe.table); then every token's padding. `first`, `step`: this thread
// and the grid's, in threads (multiples of 32 apart).
__device__ void write_partial_output(const CallPrep& p, int64_t first, int64_t step) {
  const OutputRecipe& r = p.recipe;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t rows = static_cast<int64_t>(r.num_tokens) * r.heads;
  for (int64_t row = first / 32; row < rows; row += step / 32) {
    const auto t = static_cast<int>(row / r.heads);
    uint16_t* dst = p.partial_output + t * r.token_stride + (row % r.heads) * r.head_dim;
    if (p.poison_inputs || r.token_normal[t] == 0) {
      const uint16_t v = p.poison_inputs ? uint16_t{0xFFFF} : recipe_nan(r);
      for (int d = lane; d < r.head_dim; d += 32) dst[d] = v;
      continue;
    }
    const RowDraw draw = row_draw(r.row_key, static_cast<uint64_t>(row));
    // A lane's elements kBatch at a time: their table reads issued together,
    // then the stores (the stores may alias the table for the compiler, so
    // one element at a time waited for a table read each).
    // The table is there (launch_call_prep): recipe_row_bits' table branch.
    constexpr int kBatch = 8;
    const uint16_t* table = recipe_row_table(r, draw);
    for (int d0 = lane; d0 < r.head_dim; d0 += 32 * kBatch) {
      uint16_t v[kBatch];
      DCP_UNROLL for (int k = 0; k < kBatch; ++k) {
        const int d = d0 + 32 * k;
        v[k] = d < r.head_dim ? table[row_index(draw, d)] : uint16_t{0};
      }
      DCP_UNROLL for (int k = 0; k < kBatch; ++k) {
        const int d = d0 + 32 * k;
        if (d < r.head_dim) dst[d] = v[k];
      }
    }
  }
  const int64_t row_len = static_cast<int64_t>(r.heads) * r.head_dim;
  const int64_t pad = r.token_stride - row_len;
  const uint16_t pad_value = p.poison_inputs ? uint16_t{0xFFFF} : recipe_nan(r);
  for (int64_t i = first; i < r.num_tokens * pad; i += step) {
    p.partial_output[(i / pad) * r.token_stride + row_len + i % pad] = pad_value;
  }
}

// Every part grid-strided by every thread: the largest (partial_output, the
// whole kimi T=128 buffer is 4 Mi elements) sizes the grid.
__global__ void call_prep_kernel(CallPrep p) {
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  if (p.partial_output != nullptr) write_partial_output(p, first, step);
  if (p.lse_from_stream && !p.poison_inputs) {
    const LseStream& s = p.lse_stream;
    const int64_t n = static_cast<int64_t>(s.num_tokens) * s.stride;
    const int bytes = s.format == 2 ? 4 : 2;
    for (int64_t i = first; i < n; i += step) {
      const auto t = static_cast<int>(i / s.stride);
      const uint32_t b = lse_stream_bits(s, t, i - int64_t{t} * s.stride);
      if (bytes == 4) {
        reinterpret_cast<uint32_t*>(p.partial_lse)[i] = b;
      } else {
        reinterpret_cast<uint16_t*>(p.partial_lse)[i] = static_cast<uint16_t>(b);
      }
    }
  } else {
    for (int64_t i = first; i < static_cast<int64_t>(p.lse_bytes); i += step) {
      p.partial_lse[i] = p.poison_inputs ? uint8_t{0xFF} : p.lse_src[i];
    }
  }
  for (int64_t i = first; i < static_cast<int64_t>(p.seq_bytes); i += step) {
    p.sequences[i] = p.seq_src[i];
  }
  // The region, word by word: the canary in a guard, else poison.
  const OutputRegion& r = p.region;
  auto* words = static_cast<uint32_t*>(r.base);
  const auto guard = static_cast<int64_t>(r.guard_bytes / 4);
  const int64_t out_end = guard + static_cast<int64_t>(r.out_bytes / 4);  // second guard
  const int64_t lse_begin = out_end + guard,
                lse_end = lse_begin + static_cast<int64_t>(r.lse_bytes / 4);
  const uint32_t canary = p.canary * 0x01010101u;
  for (int64_t i = first; i < static_cast<int64_t>(r.total_bytes() / 4); i += step) {
    const bool poison = (i >= guard && i < out_end) || (i >= lse_begin && i < lse_end);
    words[i] = poison ? 0xFFFFFFFFu : canary;
  }
}

}  // namespace

cudaError_t launch_call_prep(const CallPrep& p, cudaStream_t stream) {
  const OutputRegion& r = p.region;
  if (reinterpret_cast<uintptr_t>(r.base) % 4 != 0 || r.guard_bytes % 4 != 0 ||
      r.out_bytes % 4 != 0 || r.lse_bytes % 4 != 0 || (r.base == nullptr && r.total_bytes() > 0)) {
    return cudaErrorInvalidValue;
  }
  const OutputRecipe& rec = p.recipe;
  int64_t out_elems = 0;
  if (p.partial_output != nullptr) {
    if (rec.num_tokens < 1 || rec.heads < 1 || rec.head_dim < 1 ||
        rec.token_stride < static_cast<int64_t>(rec.heads) * rec.head_dim ||
        (!p.poison_inputs && (rec.token_normal == nullptr || rec.table == nullptr))) {
      return cudaErrorInvalidValue;
    }
    out_elems = static_cast<int64_t>(rec.num_tokens) * rec.token_stride;
  }
  const LseStream& ls = p.lse_stream;
  if (p.lse_from_stream &&
      (ls.kinds == nullptr || ls.stride < ls.recipe.heads_total || ls.format < 0 ||
       ls.format > 2 ||
       p.lse_bytes != static_cast<size_t>(ls.num_tokens) * ls.stride * (ls.format == 2 ? 4 : 2))) {
    return cudaErrorInvalidValue;
  }
  if ((p.lse_bytes > 0 &&
       (p.partial_lse == nullptr ||
        (!p.poison_inputs && !p.lse_from_stream && p.lse_src == nullptr))) ||
      (p.seq_bytes > 0 && (p.sequences == nullptr || p.seq_src == nullptr))) {
    return cudaErrorInvalidValue;
  }
  const int64_t most =
      std::max({out_elems, static_cast<int64_t>(p.lse_bytes), static_cast<int64_t>(p.seq_bytes),
                static_cast<int64_t>(r.total_bytes() / 4)});
  if (most == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const auto blocks =
      static_cast<unsigned>(std::min<int64_t>((most + kThreads - 1) / kThreads, 4096));
  call_prep_kernel<<<blocks, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace dcp
