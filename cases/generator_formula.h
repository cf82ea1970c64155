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

#include <cstddef>
#include <cstdint>

#include "check_math.h"
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
// The table index of element d of a row drawn as `r`.
DCP_HD uint32_t row_index(const RowDraw& r, int64_t d) {
  return (r.offset + static_cast<uint32_t>(d)) & (kValueTableSize - 1);
}
// Element d of a row drawn as `r`, before rounding.
DCP_HD float row_float(const RowDraw& r, int64_t d) { return table_float(row_index(r, d), r.scale_k); }

// ---- The value table as the device holds it ----
// One array for both 16-bit formats and every scale, filled once per
// process on the device (kernels/device_value_table.h) from table_float:
// slot value_table_slot(bf16, k, i) holds table_float(i, k) rounded to the
// format (value_table_bits); value_table_value is those bits decoded (exact),
// as the device checker decodes them. The device reads a row's elements
// from it instead of evaluating the formula per element (a 64-bit hash and
// two slow conversions each); the host's value_table.h is the same table.
constexpr size_t kDeviceValueTableSlots = size_t{2} * 4 * kValueTableSize;
DCP_HD size_t value_table_slot(bool bf16, int k, uint32_t i) {
  return (static_cast<size_t>(bf16 ? 4 : 0) + static_cast<size_t>(k)) * kValueTableSize + i;
}
DCP_HD uint16_t value_table_bits(bool bf16, int k, uint32_t i) {
  const float x = table_float(i, k);
  return bf16 ? float_to_bf16_bits(x) : float_to_fp16_bits(x);
}
DCP_HD double value_table_value(bool bf16, int k, uint32_t i) {
  return check_math::half_to_float(bf16, value_table_bits(bf16, k, i));
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
  // The device value table's bits (value_table_slot), in the memory the
  // reader runs in; null: the formula, element by element. The same bits.
  const uint16_t* table = nullptr;
};

// What a row that is not normal, and the padding, hold.
DCP_HD uint16_t recipe_nan(const OutputRecipe& r) { return r.bf16 ? 0x7FC0u : 0x7E00u; }
// Element d of the normal row (t, head) drawn as `draw` (row_draw(row_key,
// t * heads + head)), as stored.
// The row's part of the table (r.table set): element d is at [row_index(draw, d)].
DCP_HD const uint16_t* recipe_row_table(const OutputRecipe& r, const RowDraw& draw) {
  return r.table + value_table_slot(r.bf16, draw.scale_k, 0);
}
DCP_HD uint16_t recipe_row_bits(const OutputRecipe& r, const RowDraw& draw, int64_t d) {
  const uint32_t i = row_index(draw, d);
  return r.table != nullptr ? recipe_row_table(r, draw)[i] : value_table_bits(r.bf16, draw.scale_k, i);
}
// Element `col` of token `t` (col < token_stride), as stored.
DCP_HD uint16_t recipe_bits(const OutputRecipe& r, int t, int64_t col) {
  const int64_t row_len = static_cast<int64_t>(r.heads) * r.head_dim;
  if (col >= row_len || r.token_normal[t] == 0) return recipe_nan(r);
  const uint64_t row = static_cast<uint64_t>(t) * r.heads + static_cast<uint64_t>(col / r.head_dim);
  return recipe_row_bits(r, row_draw(r.row_key, row), col % r.head_dim);
}

// ---- The LSE formula (partial_lse), shared with the device checker ----

// Domain tags keep the streams of different tensors unrelated.
enum GeneratorTag : uint64_t {
  kTagOp = 0xDC9C0001,
  kTagOut,  // retired (the output elements' own stream, before the value table)
  kTagRow,
  kTagLse,
  kTagLayout,
  kTagTokenLse,
  kTagSpecial,
};

// How a (source, token) row is drawn: normal; masked (the source's KV shard
// is empty for the token's sequence: garbage LSE, NaN values); planted (the
// case's special LSE value, NaN values).
enum class LseRowKind : uint8_t { kNormal = 0, kMasked = 1, kPlanted = 2 };

// What the LSE of one op needs besides the row kinds: `special` is the case's
// SpecialLse (case.h) as its underlying value.
struct LseRecipe {
  uint64_t op_key = 0;
  int dcp_size = 0;
  int heads_total = 0;  // W * H: every head of every destination
  uint8_t special = 0;  // 0 none, 1 equal, 2 huge gap, 3 +inf, 4 -inf, 5 NaN
};
namespace lse_special {
constexpr uint8_t kNone = 0, kEqual = 1, kHugeGap = 2, kPosInf = 3, kNegInf = 4, kNan = 5;
}

// About a quarter of the tokens are special (when the case plants values).
DCP_HD bool lse_special_token(const LseRecipe& r, int token) {
  return r.special != lse_special::kNone &&
         stream_at(hash_in(r.op_key, kTagSpecial), static_cast<uint64_t>(token)) % 4 == 0;
}

// A row the layout does not mask: planted when the case plants +-inf or NaN,
// the token is special and a coin says so (all sources sometimes: an all
// -inf row); else normal.
// `special`: lse_special_token(r, token), given by a caller that walks every
// source of one token.
DCP_HD LseRowKind lse_unmasked_kind(const LseRecipe& r, int src, int token, bool special) {
  const bool plants = r.special == lse_special::kPosInf || r.special == lse_special::kNegInf ||
                      r.special == lse_special::kNan;
  if (plants && special && (hash_all(r.op_key, kTagSpecial, token, src) & 1)) {
    return LseRowKind::kPlanted;
  }
  return LseRowKind::kNormal;
}
DCP_HD LseRowKind lse_unmasked_kind(const LseRecipe& r, int src, int token) {
  return lse_unmasked_kind(r, src, token, lse_special_token(r, token));
}

// The LSE of (src, token, head) as drawn, before the rounding to its dtype.
// lse_key: the source's (hash_all(op_key, kTagLse, src)). Masked rows hold
// garbage (NaN, or a large finite value that would dominate the combine if
// the kernel forgot the mask); normal rows get a per-token offset and spread,
// so rows range from near-equal LSEs to gaps of tens (weights ~1/W to
// ~2^-40); special tokens of the equal and huge-gap cases share one value
// (huge gap: all but one source 160..300 lower: 0 in fp32).
DCP_HD double lse_formula(const LseRecipe& r, uint64_t lse_key, LseRowKind kind, int src,
                          int token, int head) {
  using namespace check_math;
  const uint64_t idx = static_cast<uint64_t>(token) * static_cast<uint64_t>(r.heads_total) +
                       static_cast<uint64_t>(head);
  if (kind == LseRowKind::kMasked) {
    const uint64_t g = stream_at(lse_key, idx);
    return (g & 3) == 0 ? quiet_nan() : add(20, mul(20, unit_double(g)));
  }
  if (kind == LseRowKind::kPlanted) {
    return r.special == lse_special::kNan      ? quiet_nan()
           : r.special == lse_special::kPosInf ? inf()
                                               : neg_inf();
  }
  const uint64_t tk = hash_all(r.op_key, kTagTokenLse, token);
  constexpr double kSpreads[4] = {0.5, 2, 8, 20};
  const double offset = add(-4, mul(12, unit_double(tk)));
  const double spread = kSpreads[mix64(tk) & 3];
  if ((r.special == lse_special::kEqual || r.special == lse_special::kHugeGap) &&
      lse_special_token(r, token)) {
    const uint64_t hv = hash_all(r.op_key, kTagTokenLse, token, head);
    double v = add(offset, mul(spread, sub(mul(2, unit_double(hv)), 1)));  // every source alike
    if (r.special == lse_special::kHugeGap &&
        src != static_cast<int>((hv >> 32) % static_cast<uint64_t>(r.dcp_size))) {
      v = sub(v, add(160, mul(140, unit_double(hash_in(hv, static_cast<uint64_t>(src))))));
    }
    return v;
  }
  return add(offset, mul(spread, sub(mul(2, unit_double(stream_at(lse_key, idx))), 1)));
}

// A drawn LSE's bits as stored in its dtype (0 fp16, 1 bf16, 2 fp32:
// Format's order; 16-bit formats in the low bits): one rounding to float,
// then to 16 bits.
DCP_HD uint32_t lse_bits_of(int format, double x) {
  const float f = static_cast<float>(x);
  if (format == 0) return float_to_fp16_bits(f);
  if (format == 1) return float_to_bf16_bits(f);
  return float_bits(f);
}
// The same, read back as double.
DCP_HD double lse_stored(int format, double x) {
  const uint32_t b = lse_bits_of(format, x);
  if (format == 0) return check_math::fp16_to_float(static_cast<uint16_t>(b));
  if (format == 1) return check_math::bf16_to_float(static_cast<uint16_t>(b));
  return bits_float(b);
}

// One source's partial_lse as a formula, for a backend that writes it where
// it is used (the GPU's call preparation): element (t, j) of [T, stride] is
// lse_bits_of(format, lse_formula(...)) for j < heads_total, else quiet NaN
// (padding the kernel must never read). kinds: the source's [T] row kinds.
struct LseStream {
  LseRecipe recipe;
  uint64_t key = 0;  // the source's LSE key
  int src = 0;
  int format = 2;
  int num_tokens = 0;
  int64_t stride = 0;  // elements per token row, >= recipe.heads_total
  const uint8_t* kinds = nullptr;
};
DCP_HD uint32_t lse_stream_bits(const LseStream& s, int t, int64_t j) {
  if (j >= s.recipe.heads_total) return s.format == 0 ? 0x7E00u : s.format == 1 ? 0x7FC0u : 0x7FC00000u;
  const auto kind = static_cast<LseRowKind>(s.kinds[t]);
  return lse_bits_of(s.format, lse_formula(s.recipe, s.key, kind, s.src, t, static_cast<int>(j)));
}

}  // namespace dcp
