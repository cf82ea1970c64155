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

// Domain tags keep the streams of different tensors unrelated.
enum Tag : uint64_t {
  kTagOp = 0xDC9C0001,
  kTagOut,  // retired (the output elements' own stream, before the value table)
  kTagRow,
  kTagLse,
  kTagLayout,
  kTagTokenLse,
  kTagSpecial,
};

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

bool SequenceLayout::row_masked(int src, int token) const {
  if (query_start_loc.empty()) return false;
  const auto it = std::upper_bound(query_start_loc.begin(), query_start_loc.end(), token);
  const auto seq = static_cast<size_t>(it - query_start_loc.begin()) - 1;
  return seq_lens[static_cast<size_t>(src)][seq] == 0;
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
}

OpGenerator::RowKind OpGenerator::row_kind(int src, int token) const {
  if (layout_.row_masked(src, token)) return RowKind::kMasked;
  const SpecialLse sp = c_.special;
  if (sp != SpecialLse::kPosInf && sp != SpecialLse::kNegInf && sp != SpecialLse::kNan) {
    return RowKind::kNormal;
  }
  // About a quarter of the tokens are special; on those, each source is
  // planted with probability 1/2 (all of them sometimes: an all -inf row).
  const bool special_token = stream_at(hash_in(op_key_, kTagSpecial), token) % 4 == 0;
  if (special_token && (hash_all(op_key_, kTagSpecial, token, src) & 1)) return RowKind::kPlanted;
  return RowKind::kNormal;
}

// What a (src, token) LSE row shares across its heads: drawn once per row.
OpGenerator::TokenLse OpGenerator::token_lse(int src, int token) const {
  TokenLse t;
  t.kind = row_kind(src, token);
  if (t.kind != RowKind::kNormal) return t;
  // Per-token offset and spread, so rows range from near-equal LSEs to gaps
  // of tens (weights from ~1/W to ~2^-40).
  const uint64_t tk = hash_all(op_key_, kTagTokenLse, token);
  constexpr double kSpreads[4] = {0.5, 2, 8, 20};
  t.offset = -4 + 12 * unit_double(tk);
  t.spread = kSpreads[mix64(tk) & 3];
  t.special_token =
      c_.special != SpecialLse::kNone && stream_at(hash_in(op_key_, kTagSpecial), token) % 4 == 0;
  return t;
}

// A normal row's LSE at element idx of the source's stream (no special value).
inline double OpGenerator::drawn_lse(const TokenLse& t, uint64_t lse_key, uint64_t idx) {
  return t.offset + t.spread * (2 * unit_double(stream_at(lse_key, idx)) - 1);
}

double OpGenerator::lse_at(const TokenLse& t, int src, int token, int head) const {
  const int wh = c_.dcp_size * c_.geometry.heads_per_rank;
  const uint64_t idx = static_cast<uint64_t>(token) * wh + head;
  switch (t.kind) {
    case RowKind::kMasked: {
      // Garbage: NaN, or a large finite value that would dominate the combine
      // if the kernel forgot the mask (a NaN alone would hide that bug).
      const uint64_t r = stream_at(lse_keys_[src], idx);
      return (r & 3) == 0 ? kNan : 20 + 20 * unit_double(r);
    }
    case RowKind::kPlanted:
      return c_.special == SpecialLse::kNan      ? kNan
             : c_.special == SpecialLse::kPosInf ? kInf
                                                 : -kInf;
    case RowKind::kNormal:
      break;
  }
  if (t.special_token &&
      (c_.special == SpecialLse::kEqual || c_.special == SpecialLse::kHugeGap)) {
    const uint64_t hv = hash_all(op_key_, kTagTokenLse, token, head);
    double v = t.offset + t.spread * (2 * unit_double(hv) - 1);  // the same for every source
    if (c_.special == SpecialLse::kHugeGap && src != static_cast<int>((hv >> 32) % c_.dcp_size)) {
      v -= 160 + 140 * unit_double(hash_in(hv, static_cast<uint64_t>(src)));  // 2^-160: 0 in fp32
    }
    return v;
  }
  return drawn_lse(t, lse_keys_[src], idx);
}

double OpGenerator::lse_double(int src, int token, int head) const {
  return lse_at(token_lse(src, token), src, token, head);
}

void OpGenerator::lse_row(int src, int token, double* out) const {
  const TokenLse t = token_lse(src, token);
  const int wh = c_.dcp_size * c_.geometry.heads_per_rank;
  const bool plain = t.kind == RowKind::kNormal &&
                     !(t.special_token && (c_.special == SpecialLse::kEqual ||
                                           c_.special == SpecialLse::kHugeGap));
  if (plain) {  // lse_at's last line, in a loop the compiler unrolls
    const uint64_t base = static_cast<uint64_t>(token) * wh;
    for (int h = 0; h < wh; ++h) out[h] = drawn_lse(t, lse_keys_[src], base + h);
    return;
  }
  for (int h = 0; h < wh; ++h) out[h] = lse_at(t, src, token, h);
}

uint32_t OpGenerator::lse_bits(int src, int token, int head) const {
  return float_to_bits(format_of(c_.lse_dtype), static_cast<float>(lse_double(src, token, head)));
}

double OpGenerator::lse_value(int src, int token, int head) const {
  return decode(format_of(c_.lse_dtype), lse_bits(src, token, head));
}

bool OpGenerator::token_normal(int src, int token) const {
  return row_kind(src, token) == RowKind::kNormal;
}

uint64_t OpGenerator::row_key(int src) const { return row_keys_[src]; }

RowStream OpGenerator::row_stream(int src, int token, int head) const {
  RowStream r;
  if (row_kind(src, token) != RowKind::kNormal) return r;
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
