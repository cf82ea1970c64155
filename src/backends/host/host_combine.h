// The host model's LSE-weighted combine of one (token, head) row, built from
// the kernel's own arithmetic (kernels/combine_math.h): weights 2^(l - m)/sum
// in fp32, fused multiply-add accumulation in source order, one rounding to the
// output dtype. LSEs arrive already in base 2 with masked rows at -inf (the
// dispatch converts them, as the kernel's does). A source of weight 0 is never
// read (its row may be garbage or NaN).
#pragma once

#include <cstdint>

#include "combine_math.h"

namespace dcp {

inline constexpr int kHostMaxRanks = kMaxDcpSize;

template <ElemType kOut>
void host_combine_row(int num_sources, const float* lse2, const uint16_t* const* rows, int dim,
                      uint16_t* out) {
  float w[kHostMaxRanks];
  if (!math::combine_weights(lse2, num_sources, w)) {
    for (int d = 0; d < dim; ++d) out[d] = 0;  // every source empty: exactly zero
    return;
  }
  for (int d = 0; d < dim; ++d) {
    float acc = 0.0f;
    for (int s = 0; s < num_sources; ++s) {
      if (w[s] == 0.0f) continue;
      acc = math::accumulate(acc, w[s], math::half_bits_to_float<kOut>(rows[s][d]));
    }
    out[d] = math::float_to_half_bits<kOut>(acc);
  }
}

}  // namespace dcp
