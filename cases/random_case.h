// Random scenarios for `stress`: each draws every axis from the full space
// (token counts 1..max, pipelining depth, mixed modes, skew, special values,
// slots, epochs near wrap), reproducibly from (stress_seed, index).
#pragma once

#include <cstdint>

#include "case.h"

namespace dcp {

// Throws std::invalid_argument when `world` has no DCP group size (< 2).
Case random_case(uint64_t stress_seed, uint64_t index, int world, const Geometry& geometry);

}  // namespace dcp
