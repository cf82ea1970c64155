// Shrinking a failing case: simpler variants, most promising first. Every
// candidate is strictly simpler than its parent under shrink_measure(), a
// non-negative integer, so taking candidates repeatedly always terminates.
#pragma once

#include <cstdint>
#include <vector>

#include "case.h"

namespace dcp {

std::vector<Case> shrink_candidates(const Case& c);

// The size being reduced: tokens + calls + layers + one per non-default
// axis value + dcp size. Each candidate's measure is strictly smaller.
int64_t shrink_measure(const Case& c);

}  // namespace dcp
