// A greedy pairwise covering array (AETG-style) over axes of given sizes, with
// constraints: only the allowed pairs are to be covered and every row must be
// runnable (suite_space.h says which are).
#pragma once

#include <cstdint>
#include <vector>

namespace dcp {

class AllowedSpace;

// Rows of value indices, one per axis. Each new row starts from an uncovered
// allowed pair and fills the other axes with the value covering the most
// uncovered pairs among those allowed with every value already in the row;
// the best of several candidate rows is kept. A row that is not runnable (or
// an axis left with no allowed value) is replaced by the starting pair's
// witness, so every row covers a new pair and the array ends. Without
// `space` every pair is allowed: the unconstrained array, draw for draw.
std::vector<std::vector<int>> pairwise_rows(const std::vector<int>& sizes, uint64_t seed,
                                            const AllowedSpace* space = nullptr);

}  // namespace dcp
