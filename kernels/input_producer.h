// The harness's input producer: writes one call's partial_output on the
// device, on the call's stream right before the call, as an attention kernel
// does in production. The values are recipe_bits (cases/generator_formula.h),
// the same definition the host generator and the checker use.
#pragma once

#include <cuda_runtime_api.h>

#include "generator_formula.h"

namespace dcp {

// Writes r.num_tokens * r.token_stride 16-bit elements at `partial_output`
// (device memory); r.token_normal must point to device memory. Capturable.
cudaError_t launch_input_producer(const OutputRecipe& r, void* partial_output,
                                  cudaStream_t stream);

}  // namespace dcp
