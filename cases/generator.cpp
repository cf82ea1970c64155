// Counter-based inputs. Every value is a pure function of (seed, group, op,
// source, tensor, element index): keys are derived once per op and source.
// An output row is a window of the value table (generator_formula.h) at the
// row's offset and scale; the host reads it from value_table.h's memo, so
// the reference gets W sources x T x H x D values per call by copying, not
// hashing. output_value evaluates the formula itself (the definition), and
// tests hold the memo's rows equal to it.
#include "generator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "generator_formula.h"
#include "mix.h"
#include "value_table.h"

namespace dcp {
namespace {

uint32_t float_to_bits(Format f, float x) {
  switch (f) {
    case Format::kFp16:
      return float_to_fp16_bits(x);
    case Format::kBf16:
      return float_to_bf16_bits(x);
    case Format::kFp32:
      return std::bit_cast<uint32_t>(x);
  }
  return 0;
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Elements 0 .. n - 1 of a row at `offset` of table `t`: bits when bits_out
// is non-null, else decoded values. One contiguous run unless n exceeds the
// table's pad.
void table_row(const ValueTable& t, uint32_t offset, int n, uint32_t* bits_out,
               double* values_out) {
  for (int d = 0; d < n;) {
    const uint32_t i = (offset + static_cast<uint32_t>(d)) & (kValueTableSize - 1);
    const int run = static_cast<int>(std::min<uint32_t>(static_cast<uint32_t>(n - d), kValueTableLength - i));
    if (bits_out != nullptr) {
      std::copy(t.bits + i, t.bits + i + run, bits_out + d);
    } else {
      std::copy(t.values + i, t.values + i + run, values_out + d);
    }
    d += run;
  }
}

}  // namespace

Format format_of(DType d) {
  switch (d) {
    case DType::kFp16:
      return Format::kFp16;
    case DType::kBf16:
      return Format::kBf16;
    case DType::kFp32:
      return Format::kFp32;
  }
  return Format::kFp32;
}

int SequenceLayout::sequence_of(int token) const {
  const auto it = std::upper_bound(query_start_loc.begin(), query_start_loc.end(), token);
  return static_cast<int>(it - query_start_loc.begin()) - 1;
}

bool SequenceLayout::row_masked(int src, int token) const {
  return !query_start_loc.empty() && masked(src, sequence_of(token));
}

SequenceLayout generate_layout(const Case& c, int group_idx, int op_idx) {
  SequenceLayout l;
  const int w = c.dcp_size;
  l.seq_lens.assign(static_cast<size_t>(w), {});
  if (c.empty == EmptyPattern::kNone) return l;  // no seq_lens at all: the unmasked path
  Rng rng(hash_all(c.seed, kTagLayout, group_idx, op_idx));
  // Decode: one token per sequence; speculative decoding: 1-4 tokens each.
  l.query_start_loc.push_back(0);
  for (int t = 0; t < c.num_tokens;) {
    const int len = c.empty == EmptyPattern::kSpec ? rng.between(1, 4) : 1;
    t = std::min(c.num_tokens, t + len);
    l.query_start_loc.push_back(t);
  }
  const size_t num_seqs = l.query_start_loc.size() - 1;
  for (auto& lens : l.seq_lens) {
    lens.resize(num_seqs);
    for (auto& len : lens) len = rng.between(1, 4096);  // only == 0 matters to the kernel
  }
  switch (c.empty) {
    case EmptyPattern::kOne: {
      auto& lens = l.seq_lens[static_cast<size_t>(rng.below(w))];
      std::fill(lens.begin(), lens.end(), 0);
      break;
    }
    case EmptyPattern::kAll: {
      std::vector<bool> all_empty(num_seqs);
      bool any = false;
      for (size_t s = 0; s < num_seqs; ++s) any |= (all_empty[s] = rng.chance(0.5));
      if (!any) all_empty[static_cast<size_t>(rng.below(static_cast<int>(num_seqs)))] = true;
      for (size_t s = 0; s < num_seqs; ++s) {
        if (!all_empty[s]) continue;
        for (auto& lens : l.seq_lens) lens[s] = 0;
      }
      break;
    }
    case EmptyPattern::kRandom:
    case EmptyPattern::kSpec:
      for (auto& lens : l.seq_lens) {
        for (auto& len : lens) {
          if (rng.chance(0.3)) len = 0;
        }
      }
      break;
    case EmptyPattern::kNone:
      break;
  }
  return l;
}

OpGenerator::OpGenerator(const Case& c, int group_idx, int op_idx)
    : c_(c), layout_(generate_layout(c, group_idx, op_idx)) {
  op_key_ = hash_all(c.seed, kTagOp, group_idx, op_idx);
  for (int s = 0; s < c.dcp_size; ++s) {
    row_keys_.push_back(hash_all(op_key_, kTagRow, s));
    lse_keys_.push_back(hash_all(op_key_, kTagLse, s));
  }
  lse_recipe_.op_key = op_key_;
  lse_recipe_.dcp_size = c.dcp_size;
  lse_recipe_.heads_total = c.dcp_size * c.geometry.heads_per_rank;
  lse_recipe_.special = static_cast<uint8_t>(c.special);
}

static_assert(static_cast<uint8_t>(SpecialLse::kEqual) == lse_special::kEqual &&
              static_cast<uint8_t>(SpecialLse::kHugeGap) == lse_special::kHugeGap &&
              static_cast<uint8_t>(SpecialLse::kPosInf) == lse_special::kPosInf &&
              static_cast<uint8_t>(SpecialLse::kNegInf) == lse_special::kNegInf &&
              static_cast<uint8_t>(SpecialLse::kNan) == lse_special::kNan,
              "LseRecipe::special holds SpecialLse's values");
static_assert(static_cast<int>(Format::kFp16) == 0 && static_cast<int>(Format::kBf16) == 1 &&
              static_cast<int>(Format::kFp32) == 2, "lse_stored's format codes");

LseRowKind OpGenerator::row_kind(int src, int token) const {
  if (layout_.row_masked(src, token)) return LseRowKind::kMasked;
  return lse_unmasked_kind(lse_recipe_, src, token);
}

double OpGenerator::lse_double(int src, int token, int head) const {
  return lse_formula(lse_recipe_, lse_keys_[src], row_kind(src, token), src, token, head);
}

void OpGenerator::lse_row(int src, int token, double* out) const {
  const LseRowKind kind = row_kind(src, token);
  const int wh = c_.dcp_size * c_.geometry.heads_per_rank;
  for (int h = 0; h < wh; ++h) out[h] = lse_formula(lse_recipe_, lse_keys_[src], kind, src, token, h);
}

uint32_t OpGenerator::lse_bits(int src, int token, int head) const {
  return float_to_bits(format_of(c_.lse_dtype), static_cast<float>(lse_double(src, token, head)));
}

double OpGenerator::lse_value(int src, int token, int head) const {
  return lse_stored(static_cast<int>(format_of(c_.lse_dtype)), lse_double(src, token, head));
}

bool OpGenerator::token_normal(int src, int token) const {
  return row_kind(src, token) == LseRowKind::kNormal;
}

uint64_t OpGenerator::row_key(int src) const { return row_keys_[src]; }

RowStream OpGenerator::row_stream(int src, int token, int head) const {
  RowStream r;
  if (row_kind(src, token) != LseRowKind::kNormal) return r;
  const int wh = c_.dcp_size * c_.geometry.heads_per_rank;
  r.draw = row_draw(row_keys_[src], static_cast<uint64_t>(token) * wh + head);
  r.normal = true;
  return r;
}

void OpGenerator::output_row_bits(int src, int token, int head, uint32_t* out) const {
  const Format f = format_of(c_.out_dtype);
  const int d_count = c_.geometry.head_dim;
  const RowStream r = row_stream(src, token, head);
  if (!r.normal) {
    std::fill(out, out + d_count, quiet_nan_bits(f));  // must never be read
    return;
  }
  table_row(value_table(f, r.draw.scale_k), r.draw.offset, d_count, out, nullptr);
}

void OpGenerator::output_row(int src, int token, int head, double* out) const {
  const Format f = format_of(c_.out_dtype);
  const int d_count = c_.geometry.head_dim;
  const RowStream r = row_stream(src, token, head);
  if (!r.normal) {
    std::fill(out, out + d_count, decode(f, quiet_nan_bits(f)));  // must never be read
    return;
  }
  table_row(value_table(f, r.draw.scale_k), r.draw.offset, d_count, nullptr, out);
}

double OpGenerator::output_value(int src, int token, int head, int dim) const {
  const Format f = format_of(c_.out_dtype);
  const RowStream r = row_stream(src, token, head);
  if (!r.normal) return decode(f, quiet_nan_bits(f));
  return decode(f, float_to_bits(f, row_float(r.draw, dim)));
}

namespace {

// Padded rows of a token stride, every element quiet NaN: a kernel that
// ignores a token stride reads the padding.
std::vector<uint8_t> nan_row(Format f, size_t stride) {
  std::vector<uint8_t> row(stride * static_cast<size_t>(format_bytes(f)));
  for (size_t i = 0; i < stride; ++i) write_bits(f, row.data(), i, quiet_nan_bits(f));
  return row;
}

// x[0, n) rounded to f, stored little-endian at out (one loop per format).
void store_rounded(Format f, const double* x, int n, uint8_t* out) {
  switch (f) {
    case Format::kFp32:
      for (int i = 0; i < n; ++i) {
        const uint32_t b = std::bit_cast<uint32_t>(static_cast<float>(x[i]));
        for (int k = 0; k < 4; ++k) out[4 * i + k] = static_cast<uint8_t>(b >> (8 * k));
      }
      return;
    case Format::kFp16:
    case Format::kBf16:
      for (int i = 0; i < n; ++i) {
        const uint32_t b = float_to_bits(f, static_cast<float>(x[i]));
        out[2 * i] = static_cast<uint8_t>(b);
        out[2 * i + 1] = static_cast<uint8_t>(b >> 8);
      }
      return;
  }
}

}  // namespace

LseStream lse_stream_of(const OpGenerator& gen, const Case& c, int src) {
  LseStream s;
  s.recipe = gen.lse_recipe();
  s.key = gen.lse_key(src);
  s.src = src;
  s.format = static_cast<int>(format_of(c.lse_dtype));
  s.num_tokens = c.num_tokens;
  s.stride = c.lse_token_stride();
  return s;
}

std::vector<uint8_t> generate_source_lse(const OpGenerator& gen, const Case& c, int src) {
  const Format lf = format_of(c.lse_dtype);
  const int h_total = c.dcp_size * c.geometry.heads_per_rank;
  const auto lse_stride = static_cast<size_t>(c.lse_token_stride());
  std::vector<uint8_t> lse(static_cast<size_t>(c.num_tokens) * lse_stride * format_bytes(lf));
  std::vector<uint8_t> row = nan_row(lf, lse_stride);
  std::vector<double> values(static_cast<size_t>(h_total));
  for (int t = 0; t < c.num_tokens; ++t) {
    gen.lse_row(src, t, values.data());
    store_rounded(lf, values.data(), h_total, row.data());
    std::memcpy(lse.data() + t * row.size(), row.data(), row.size());
  }
  return lse;
}

OutputStreams output_streams(const OpGenerator& gen, const Case& c, int src) {
  OutputStreams s;
  s.row_key = gen.row_key(src);
  s.token_normal.resize(static_cast<size_t>(c.num_tokens));
  for (int t = 0; t < c.num_tokens; ++t) s.token_normal[t] = gen.token_normal(src, t) ? 1 : 0;
  return s;
}

OutputRecipe OutputStreams::recipe(const Case& c, const uint8_t* token_normal_at) const {
  OutputRecipe r;
  r.row_key = row_key;
  r.num_tokens = c.num_tokens;
  r.heads = c.dcp_size * c.geometry.heads_per_rank;
  r.head_dim = c.geometry.head_dim;
  r.token_stride = c.out_token_stride();
  r.bf16 = c.out_dtype == DType::kBf16;
  r.token_normal = token_normal_at;
  return r;
}

SourceInputs generate_source_inputs(const Case& c, int group_idx, int op_idx, int src) {
  return generate_source_inputs(OpGenerator(c, group_idx, op_idx), c, src);
}

SourceInputs generate_source_inputs(const OpGenerator& gen, const Case& c, int src) {
  const Format of = format_of(c.out_dtype);
  const int h_total = c.dcp_size * c.geometry.heads_per_rank;
  const int d_count = c.geometry.head_dim;
  const auto t_count = static_cast<size_t>(c.num_tokens);
  const auto out_stride = static_cast<size_t>(c.out_token_stride());
  const size_t ob = static_cast<size_t>(format_bytes(of));
  SourceInputs in;
  in.partial_output.resize(t_count * out_stride * ob);
  in.partial_lse = generate_source_lse(gen, c, src);
  // Rows are built once in little-endian bytes and copied (this runs per call per rank).
  std::vector<uint8_t> out_row = nan_row(of, out_stride);
  std::vector<uint32_t> row(static_cast<size_t>(d_count));
  for (int t = 0; t < c.num_tokens; ++t) {
    for (int h = 0; h < h_total; ++h) {
      gen.output_row_bits(src, t, h, row.data());
      uint8_t* dst = out_row.data() + static_cast<size_t>(h) * d_count * ob;
      for (int d = 0; d < d_count; ++d) {
        const uint32_t b = row[static_cast<size_t>(d)];
        for (size_t k = 0; k < ob; ++k) dst[d * ob + k] = static_cast<uint8_t>(b >> (8 * k));
      }
    }
    std::memcpy(in.partial_output.data() + t * out_stride * ob, out_row.data(), out_row.size());
  }
  return in;
}

double generated_output_value(const Case& c, int group_idx, int op_idx, int src, int token,
                              int head, int dim) {
  return OpGenerator(c, group_idx, op_idx).output_value(src, token, head, dim);
}

double generated_lse_value(const Case& c, int group_idx, int op_idx, int src, int token, int head) {
  return OpGenerator(c, group_idx, op_idx).lse_value(src, token, head);
}

}  // namespace dcp
