// The value table (generator_formula.h) as the host reads it: per output
// format and scale, every entry rounded to the format, as stored bits and as
// decoded values (exact in float). Built on first use (thread-safe), about
// a millisecond per format, and kept for the process.
//
// Invariant: entry i, for i < kValueTableSize + kValueTablePad, is
// table_float(i mod kValueTableSize, k) rounded to the format: the pad
// repeats the first entries, so a row of up to kValueTablePad elements is one
// contiguous read from its offset, however close to the end it starts.
#pragma once

#include <cstdint>

#include "generator_formula.h"
#include "numeric.h"

namespace dcp {

constexpr uint32_t kValueTablePad = 1024;  // the longest head_dim the CLI allows
constexpr uint32_t kValueTableLength = kValueTableSize + kValueTablePad;

struct ValueTable {
  const float* values;    // decoded, [kValueTableLength]
  const uint32_t* bits;   // as stored (low 16 bits for fp16/bf16), [kValueTableLength]
};

// The table of format `f` at scale 2^-scale_k (scale_k in 0..3).
ValueTable value_table(Format f, int scale_k);

}  // namespace dcp
