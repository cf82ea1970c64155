// `--impl both`: the direct and stock paths must agree bit for bit. Both round
// once from fp32 sums taken over the sources in the same order (they share
// kernels/combine_device.cuh), so any differing bit is a bug in one of them,
// even where both are within the reference tolerance.
#pragma once

#include <cstdint>
#include <vector>

#include "case.h"
#include "results.h"

namespace dcp {

inline constexpr const char* kImplsDisagree = "the kernel and the --against kernel disagree";

// Compares every call's output ([T, H, D] in c.out_dtype, op order) and adds
// each differing element to `into` as a mismatch (got: stock, want: direct,
// likely_source kImplsDisagree); clears into.passed on any difference.
// Returns the number of differing elements.
int64_t check_impls_agree(const Case& c, int global_rank,
                          const std::vector<std::vector<uint8_t>>& direct,
                          const std::vector<std::vector<uint8_t>>& stock, RankCaseResult& into);

}  // namespace dcp
