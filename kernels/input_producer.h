// The slow input producer (Case::producer): a call's inputs written late, by a
// kernel the op must wait for. The values are recipe_bits
// (cases/generator_formula.h), as the default preparation's (call_prep.h).
#pragma once

#include <cuda_runtime_api.h>

#include "generator_formula.h"

namespace dcp {

// The slow producer's per-call parameters. They live in device memory (the
// kernel reads them there), so a graph that captured the producer replays
// with the ones copied in before each replay.
struct SlowProducerParams {
  OutputRecipe recipe;      // partial_output's values; recipe.token_normal in device memory
  uint16_t* partial_output;  // [T, recipe.token_stride]
  const uint8_t* lse_src;   // T rows of lse_row_bytes: partial_lse's bytes, staged on the device
  uint8_t* partial_lse;     // the buffer the op reads
  int64_t lse_row_bytes;    // bytes of one token row of partial_lse (its stride)
  uint32_t delay_ns;        // the last token row is written this long after the block starts
  uint32_t reserved;
};

// The slow producer (Case::producer): one kernel that writes every row of
// partial_output and partial_lse; block 0 writes the last token row, after
// spinning delay_ns on %globaltimer, the other blocks the rows before it. With
// `trigger_early` every block executes griddepcontrol.launch_dependents first,
// so a kernel launched after it with programmatic stream serialization may
// start at once and must griddepcontrol.wait before reading. `params` is
// device memory; num_tokens and token_stride (equal to the params') shape the
// grid. Capturable.
cudaError_t launch_slow_input_producer(const SlowProducerParams* params, int num_tokens,
                                       int64_t token_stride, bool trigger_early,
                                       cudaStream_t stream);

}  // namespace dcp
