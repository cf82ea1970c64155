// The generator's output-element formula, one definition compiled for the
// host (generator.cpp, value_table.cpp, the checker) and the device
// (kernels/input_producer.cu, which writes each call's partial_output on the
// GPU): both store the same bits by construction, and tests compare them
// element for element (on the CPU in CI, on the GPU in gpu_inputs). C++17
// (device code is).
//
// A normal row is a window of the value table: kValueTableSize values drawn
// once from the counter stream kValueKey (the same in every case and build),
// read from the row's own offset on, wrapping around, times the row's scale.
// The offset and the scale come from one draw of the row's key, so every
// (seed, group, op, source, token, head) row starts somewhere else: a kernel
// that reads another row, another call's row, or another element of the row
// reads other values (two rows share an offset with probability 2^-16, and
// a 16-bit output only has 2^16 values anyway). The host keeps the table's
// values (value_table.h), so the reference reads each source value instead
// of hashing it, which is what makes the check fast (docs/DESIGN.md, "The
// value table").
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

constexpr int kValueTableBits = 16;
constexpr uint32_t kValueTableSize = uint32_t{1} << kValueTableBits;
constexpr uint64_t kValueKey = 0xDC9C7AB1E0000001ull;

// Element `index` of the counter stream `key`: uniform in [-2, 2) times the
// row's scale, rounded to float, never zero (then rounded to the output dtype).
DCP_HD float output_float(uint64_t key, uint64_t index, float scale) {
  float x = static_cast<float>(4 * unit_double(stream_at(key, index)) - 2) * scale;
  if (x == 0) x = scale;  // never zero
  return x;
}

// Value table entry i (i < kValueTableSize) at scale 2^-k, before rounding
// to the output format.
DCP_HD float table_float(uint32_t i, int k) {
  return output_float(kValueKey, i, bits_float((127u - static_cast<uint32_t>(k)) << 23));
}

// Where a normal row reads the table: its offset and its scale 2^-k (k in
// 0..3: magnitudes vary across sources and rows).
struct RowDraw {
  uint32_t offset = 0;  // < kValueTableSize
  int scale_k = 0;
};
DCP_HD RowDraw row_draw(uint64_t row_key, uint64_t row) {
  const uint64_t h = stream_at(row_key, row);
  RowDraw r;
  r.scale_k = static_cast<int>(h & 3);
  r.offset = static_cast<uint32_t>(h >> 32) & (kValueTableSize - 1);
  return r;
}
// Element d of a row drawn as `r`, before rounding.
DCP_HD float row_float(const RowDraw& r, int64_t d) {
  return table_float((r.offset + static_cast<uint32_t>(d)) & (kValueTableSize - 1), r.scale_k);
}

// One source's partial_output ([T, token_stride] 16-bit elements) as the
// rows it is drawn from. Row (t, h) is normal when token_normal[t] != 0 (the
// token's shard is not empty and its LSE is not planted); other rows and the
// padding past W*H*D hold quiet NaN, which the kernel must never read.
struct OutputRecipe {
  uint64_t row_key = 0;  // per-row offset and scale
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
  const float x = row_float(row_draw(r.row_key, row), col % r.head_dim);
  return r.bf16 ? float_to_bf16_bits(x) : float_to_fp16_bits(x);
}

}  // namespace dcp
