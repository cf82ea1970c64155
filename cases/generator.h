// Counter-based inputs: value = f(seed, group, op, source rank, index), so any
// rank regenerates any peer's inputs and any case replays alone. Inputs are
// random and non-trivial (never all zero); rows masked by an empty KV shard and
// rows whose LSE is planted as -inf/+inf/NaN hold NaN garbage, so a kernel that
// reads a zero-weight source is caught.
#pragma once

#include <cstdint>
#include <vector>

#include "case.h"
#include "generator_formula.h"
#include "numeric.h"

namespace dcp {

// Sequence layout of one op: query_start_loc (S+1 entries) is shared by all
// ranks; seq_lens[src][s] == 0 marks src's KV shard empty for sequence s.
struct SequenceLayout {
  std::vector<int32_t> query_start_loc;        // empty when c.empty == kNone
  std::vector<std::vector<int32_t>> seq_lens;  // [W][S]
  bool row_masked(int src, int token) const;   // src's shard empty for token's sequence
  // The sequence holding `token` (query_start_loc not empty), and whether
  // src's shard is empty for it: row_masked(src, t) is masked(src, sequence_of(t)).
  int sequence_of(int token) const;
  bool masked(int src, int seq) const {
    return seq_lens[static_cast<size_t>(src)][static_cast<size_t>(seq)] == 0;
  }
};
SequenceLayout generate_layout(const Case& c, int group_idx, int op_idx);

// One source rank's inputs exactly as its kernel reads them (strided, in the
// case's dtypes, raw little-endian bytes).
struct SourceInputs {
  std::vector<uint8_t> partial_output;  // T * out_token_stride elements
  std::vector<uint8_t> partial_lse;     // T * lse_token_stride elements
};
SourceInputs generate_source_inputs(const Case& c, int group_idx, int op_idx, int src);

// Single values, for the reference (exactly the values stored above, as double).
double generated_output_value(const Case& c, int group_idx, int op_idx, int src, int token,
                              int head /* in [0, W*H) */, int dim);
double generated_lse_value(const Case& c, int group_idx, int op_idx, int src, int token,
                           int head /* in [0, W*H) */);

// Where one normal (src, token, head) row reads the value table
// (generator_formula.h): element d is entry (offset + d) mod
// kValueTableSize at scale 2^-scale_k (value_table.h holds the entries).
// Rows that are not normal (masked, planted) hold NaN and read nothing.
struct RowStream {
  RowDraw draw;
  bool normal = false;
};

// The reference's fast path (additive to the per-value functions above, and
// identical to them): one op's generator with its layout computed once.
class OpGenerator {
 public:
  OpGenerator(const Case& c, int group_idx, int op_idx);
  const SequenceLayout& layout() const { return layout_; }
  bool row_masked(int src, int token) const { return layout_.row_masked(src, token); }
  double lse_value(int src, int token, int head) const;
  // The D values of (src, token, head): NaN garbage for masked rows and rows
  // whose LSE is planted +-inf or NaN.
  void output_row(int src, int token, int head, double* out) const;
  // One element of output_row, by the formula itself (output_row copies from
  // the value table's memo; tests hold the two equal bit for bit).
  double output_value(int src, int token, int head, int dim) const;
  // Where a normal row's values come from (the checker reads them from the
  // value table itself); .normal == false for masked and planted (NaN) rows.
  RowStream row_stream(int src, int token, int head) const;
  // Every head's LSE of (src, token) into out[0, W*H), as drawn (before the
  // rounding to the LSE dtype that lse_bits applies); the heads' shared draws
  // are made once.
  void lse_row(int src, int token, double* out) const;
  // Raw bits as stored (low 16 bits for fp16/bf16).
  uint32_t lse_bits(int src, int token, int head) const;
  void output_row_bits(int src, int token, int head, uint32_t* out) const;
  // The streams of a source's partial_output (OutputRecipe): a token's rows
  // are normal (drawn from them) or NaN for every head alike.
  bool token_normal(int src, int token) const;
  uint64_t row_key(int src) const;

  // How (src, token)'s row is drawn (the layout's mask, else the formula's),
  // and what else the LSE formula needs (the device checker evaluates it).
  LseRowKind row_kind(int src, int token) const;
  const LseRecipe& lse_recipe() const { return lse_recipe_; }
  uint64_t lse_key(int src) const { return lse_keys_[src]; }

 private:
  double lse_double(int src, int token, int head) const;

  Case c_;
  SequenceLayout layout_;
  uint64_t op_key_ = 0;
  std::vector<uint64_t> row_keys_;  // per source: each row's table offset and scale
  std::vector<uint64_t> lse_keys_;  // per source: LSE elements
  LseRecipe lse_recipe_;
};

// A source's partial_output as streams, for a backend that writes it where
// it is used (the GPU's input producer): the same bits as
// generate_source_inputs' partial_output (recipe_bits, generator_formula.h).
struct OutputStreams {
  uint64_t row_key = 0;
  std::vector<uint8_t> token_normal;  // [T]: 1 when the token's rows are normal
  // The recipe for `c`, reading token_normal from `token_normal_at` (this
  // vector, or a device copy of it).
  OutputRecipe recipe(const Case& c, const uint8_t* token_normal_at) const;
};
OutputStreams output_streams(const OpGenerator& gen, const Case& c, int src);
// generate_source_inputs with the op's generator already built (its layout too).
SourceInputs generate_source_inputs(const OpGenerator& gen, const Case& c, int src);
// generate_source_inputs' partial_lse alone.
std::vector<uint8_t> generate_source_lse(const OpGenerator& gen, const Case& c, int src);
// The same LSE as a formula (generator_formula.h's LseStream), for a backend
// that writes it on the device; its kinds pointer is left null (the caller
// points it at source `src`'s [T] row kinds).
LseStream lse_stream_of(const OpGenerator& gen, const Case& c, int src);

Format format_of(DType d);

}  // namespace dcp
