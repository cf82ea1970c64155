// The generator's output-element formula, one definition compiled for the
// host (generator.cpp, the checker) and the device (kernels/input_producer.cu,
// which writes each call's partial_output on the GPU): both store the same
// bits by construction, and tests compare them element for element (on the
// CPU in CI, on the GPU in gpu_inputs). C++17 (device code is).
//
// Every floating-point step is exact but the two roundings (double -> float,
// float -> fp16/bf16): 4 * unit_double(r) is exact, so a fused multiply-add
// of `4 * u - 2` rounds the same as the two operations; the scale is a power
// of two >= 1/8 and |x| >= 2^-51, so the product never underflows.
#pragma once

#include <cstdint>

#include "float_bits.h"
#include "mix.h"

namespace dcp {

// Element `index` of the counter stream `key`: uniform in [-2, 2) times the
// row's scale, rounded to float, never zero (then rounded to the output dtype).
DCP_HD float output_float(uint64_t key, uint64_t index, float scale) {
  float x = static_cast<float>(4 * unit_double(stream_at(key, index)) - 2) * scale;
  if (x == 0) x = scale;  // never zero
  return x;
}

// A row's scale: 1, 1/2, 1/4 or 1/8 (magnitudes vary across sources).
DCP_HD float row_scale_of(uint64_t row_key, uint64_t row) {
  const auto k = static_cast<uint32_t>(stream_at(row_key, row) & 3);
  return bits_float((127u - k) << 23);  // 2^-k
}

// One source's partial_output ([T, token_stride] 16-bit elements) as the
// streams it is drawn from. Row (t, h) is normal when token_normal[t] != 0
// (the token's shard is not empty and its LSE is not planted); other rows
// and the padding past W*H*D hold quiet NaN, which the kernel must never read.
struct OutputRecipe {
  uint64_t out_key = 0;  // element stream
  uint64_t row_key = 0;  // per-row scale stream
  int num_tokens = 0;
  int heads = 0;         // W * H: every head of every destination
  int head_dim = 0;
  int64_t token_stride = 0;  // elements, >= heads * head_dim
  bool bf16 = true;          // else fp16
  const uint8_t* token_normal = nullptr;  // [num_tokens], host or device memory
};

// Element `col` of token `t` (col < token_stride), as stored.
DCP_HD uint16_t recipe_bits(const OutputRecipe& r, int t, int64_t col) {
  const uint16_t nan = r.bf16 ? 0x7FC0u : 0x7E00u;
  const int64_t row_len = static_cast<int64_t>(r.heads) * r.head_dim;
  if (col >= row_len || r.token_normal[t] == 0) return nan;
  const uint64_t row = static_cast<uint64_t>(t) * r.heads + static_cast<uint64_t>(col / r.head_dim);
  const uint64_t index = row * static_cast<uint64_t>(r.head_dim) + static_cast<uint64_t>(col % r.head_dim);
  const float x = output_float(r.out_key, index, row_scale_of(r.row_key, row));
  return r.bf16 ? float_to_bf16_bits(x) : float_to_fp16_bits(x);
}

}  // namespace dcp
