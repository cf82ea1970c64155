// One call's preparation on the device: one kernel launch on the call's
// stream right before the op (an attention kernel writes the op's inputs the
// same way in production). It writes
//   partial_output  from the recipe (cases/generator_formula.h: the same
//                   definition the host generator and the checker use), or
//                   0xFF bytes when poison_inputs (the slow producer writes it later);
//   partial_lse     lse_bytes copied from lse_src, or from its stream (lse_stream:
//                   the same formula as the host's), or 0xFF bytes when poison_inputs;
//   sequences       seq_bytes copied from seq_src (seq_lens, then query_start_loc);
//   the output region: its guards with the canary, the output and LSE with
//                   0xFF (NaN in every dtype: what the op leaves unwritten reads as poison).
// The sources (token flags, LSE bytes, sequences) are one packed device buffer,
// so a call's inputs cost one host-to-device copy and this one launch. The
// destinations stay separate allocations: an op that reads past one of them
// is what compute-sanitizer reports.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "generator_formula.h"
#include "output_region.h"

namespace dcp {

struct CallPrep {
  OutputRecipe recipe;                 // recipe.token_normal and .table in device memory
  uint16_t* partial_output = nullptr;  // [T, recipe.token_stride]; null: left alone (copied in)
  bool poison_inputs = false;          // partial_output and partial_lse get 0xFF
  const uint8_t* lse_src = nullptr;    // device memory; unread when poison_inputs or streamed
  bool lse_from_stream = false;        // partial_lse from lse_stream (kinds in device memory)
  LseStream lse_stream;
  uint8_t* partial_lse = nullptr;
  size_t lse_bytes = 0;
  const uint8_t* seq_src = nullptr;  // device memory
  uint8_t* sequences = nullptr;
  size_t seq_bytes = 0;
  OutputRegion region;  // its base and sizes multiples of 4
  uint8_t canary = 0;
};

// cudaErrorInvalidValue for a region not 4-byte aligned, a partial_output
// without a valid recipe, or a copy without its source or destination. Capturable.
cudaError_t launch_call_prep(const CallPrep& p, cudaStream_t stream);

}  // namespace dcp
