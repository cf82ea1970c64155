// Shrinking a failing case: simpler variants, most promising first. Every
// candidate is strictly simpler than its parent under shrink_measure(), a
// non-negative integer, so taking candidates repeatedly always terminates.
#pragma once

#include <cstdint>
#include <vector>

#include "case.h"

namespace dcp {

// Each axis's shrink steps (cases/axes.h), in the table's shrink order, that
// lower the measure.
std::vector<Case> shrink_candidates(const Case& c);

// The size being reduced: the sum of the axes' measures (tokens + calls +
// layers + slots + dcp size + one per other non-default axis value).
int64_t shrink_measure(const Case& c);

}  // namespace dcp
