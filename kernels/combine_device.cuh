// Device pieces shared by the direct and the stock combine: loading one LSE
// element as base-2 fp32, and combining the rows of W sources for one
// (token, head) with the arithmetic of combine_math.h. CUDA only; included by
// kernels/*.cu, never by src/.
#pragma once

#include <cstdint>

#include "combine_math.h"
#include "mutants.h"

namespace dcp::device {

inline constexpr int kVecElems = 8;  // 16-byte vectors of 16-bit elements
inline constexpr unsigned kFullMask = 0xFFFFFFFFu;

// Reads element `idx` of an LSE tensor of dtype kLse and converts it to
// sanitised base 2 (NaN and +inf become -inf).
template <ElemType kLse>
__device__ __forceinline__ float load_lse_base2(const void* lse, int64_t idx, bool base_e,
                                                bool skip_base_conversion) {
  float raw;
  if constexpr (kLse == ElemType::kFp32) {
    raw = __ldg(static_cast<const float*>(lse) + idx);
  } else {
    const uint16_t bits = __ldg(static_cast<const unsigned short*>(lse) + idx);
    raw = math::half_bits_to_float<kLse>(bits);
  }
  return math::lse_to_base2(raw, base_e && !skip_base_conversion);
}

// Where one combine reads and writes. Source s's row (t, h) starts at
// out_src + s * out_src_stride + (t * H + h) * D; its LSE at
// lse_src + s * lse_src_stride + t * H + h. These buffers were written by
// other ranks: they are read with ld.global.cg (coherent at L2), never through
// the read-only path.
struct CombineView {
  const uint16_t* out_src;
  int64_t out_src_stride;  // elements
  const float* lse_src;
  int64_t lse_src_stride;  // elements
  int num_sources;
  int num_tokens;
  int heads;
  int head_dim;
  uint16_t* output;  // [T, H, D]
  float* combined_lse = nullptr;  // [T, H] fp32 in the inputs' base, or null: not written
  bool lse_base_e = false;        // the inputs' base (for combined_lse)
};

template <ElemType kOut>
__device__ __forceinline__ void unpack8(const uint4& v, float* x) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x[2 * i] = math::half_bits_to_float<kOut>(static_cast<uint16_t>(words[i] & 0xFFFFu));
    x[2 * i + 1] = math::half_bits_to_float<kOut>(static_cast<uint16_t>(words[i] >> 16));
  }
}

template <ElemType kOut>
__device__ __forceinline__ uint4 pack8(const float* x) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    w[i] = static_cast<uint32_t>(math::float_to_half_bits<kOut>(x[2 * i])) |
           (static_cast<uint32_t>(math::float_to_half_bits<kOut>(x[2 * i + 1])) << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <ElemType kOut>
__device__ __forceinline__ float round_through(float x) {
  return math::half_bits_to_float<kOut>(math::float_to_half_bits<kOut>(x));
}

// Weights of one row, in every lane. Lane s loads source s's LSE; a shuffle
// hands all of them to every lane (W <= 8 <= 32).
template <bool kWithMutants>
__device__ __forceinline__ void row_weights(const CombineView& v, int row, int mutant, float* w) {
  const int lane = threadIdx.x & 31;
  float mine = math::neg_inf();
  if (lane < v.num_sources) {
    mine = __ldcg(v.lse_src + lane * v.lse_src_stride + row);
  }
  float l2[kMaxDcpSize];
#pragma unroll
  for (int s = 0; s < kMaxDcpSize; ++s) {
    l2[s] = __shfl_sync(kFullMask, mine, s);
  }
  const int n = v.num_sources;
  if constexpr (kWithMutants) {
    if (mutant == kMutantUnnormalisedWithNegInf) {
      // The mistake: normalisation only on the "all sources finite" path.
      const float sum = math::combine_exponents(l2, n, w);
      bool any_neg_inf = false;
#pragma unroll
      for (int s = 0; s < kMaxDcpSize; ++s) {
        if (s < n) any_neg_inf |= !(l2[s] > math::neg_inf());
      }
      if (!any_neg_inf && sum > 0.0f) {
#pragma unroll
        for (int s = 0; s < kMaxDcpSize; ++s) {
          if (s < n) w[s] /= sum;
        }
      }
      return;
    }
  }
  math::combine_weights(l2, n, w);
}

// Combines rows [first_row, T*H) with stride `row_step`, one warp per row.
// Sources with weight 0 are never read (their rows may hold NaN garbage).
template <ElemType kOut, bool kWithMutants>
__device__ void combine_rows(const CombineView& v, int first_row, int row_step, int mutant) {
  const int lane = threadIdx.x & 31;
  int num_tokens = v.num_tokens;
  if constexpr (kWithMutants) {
    // The mistake: a loop unrolled by two tokens without a tail.
    if (mutant == kMutantDropLastOddToken) num_tokens &= ~1;
  }
  const int num_rows = num_tokens * v.heads;
  const int vecs_per_row = v.head_dim / kVecElems;
  for (int row = first_row; row < num_rows; row += row_step) {
    float w[kMaxDcpSize];
    row_weights<kWithMutants>(v, row, mutant, w);
    if (v.combined_lse != nullptr && lane == 0) {
      float l2[kMaxDcpSize];
#pragma unroll
      for (int s = 0; s < kMaxDcpSize; ++s) {
        l2[s] = s < v.num_sources ? __ldcg(v.lse_src + s * v.lse_src_stride + row) : math::neg_inf();
      }
      bool base_e = v.lse_base_e;
      if constexpr (kWithMutants) {
        // The mistake: the combined LSE is left in base 2 (the receive buffers' base).
        if (mutant == kMutantCombinedLseBase2) base_e = false;
      }
      v.combined_lse[row] = math::combined_lse(l2, v.num_sources, base_e);
    }
    bool read_zero_weight = false;
    bool half_accumulation = false;
    if constexpr (kWithMutants) {
      read_zero_weight = mutant == kMutantMaskedRowsRead;
      half_accumulation = mutant == kMutantHalfAccumulation;
    }
    const int64_t row_off = static_cast<int64_t>(row) * v.head_dim;
    uint4* dst = reinterpret_cast<uint4*>(v.output + row_off);
    for (int vec = lane; vec < vecs_per_row; vec += 32) {
      float acc[kVecElems];
#pragma unroll
      for (int i = 0; i < kVecElems; ++i) acc[i] = 0.0f;
#pragma unroll
      for (int s = 0; s < kMaxDcpSize; ++s) {
        if (s >= v.num_sources || (!(w[s] > 0.0f) && !read_zero_weight)) continue;
        const uint4* src =
            reinterpret_cast<const uint4*>(v.out_src + s * v.out_src_stride + row_off);
        float x[kVecElems];
        unpack8<kOut>(__ldcg(src + vec), x);
#pragma unroll
        for (int i = 0; i < kVecElems; ++i) {
          acc[i] = math::accumulate(acc[i], w[s], x[i]);
          if (half_accumulation) acc[i] = round_through<kOut>(acc[i]);
        }
      }
      dst[vec] = pack8<kOut>(acc);
      if constexpr (kWithMutants) {
        if (mutant == kMutantWritePastOutput && row == num_rows - 1) {
          dst[vec + vecs_per_row] = pack8<kOut>(acc);  // row num_rows: past the end
        }
      }
    }
  }
}

}  // namespace dcp::device
