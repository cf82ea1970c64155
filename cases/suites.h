// Named suites of cases. Every suite is a pure function of its options, so
// `dcp-check list` needs no GPU and workers can be sent case ids alone.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "case.h"

namespace dcp {

struct SuiteOptions {
  int world = 2;           // total ranks; dcp sizes are the divisors >= 2
  Geometry geometry;       // from a preset or custom flags
  uint64_t base_seed = 0;  // mixed into every case seed (--seed)
};

const std::vector<std::string>& suite_names();  // smoke, default, full, upstream, pressure
// Throws std::invalid_argument for an unknown suite.
std::vector<Case> build_suite(std::string_view suite, const SuiteOptions& opts);
std::vector<int> dcp_sizes_for_world(int world);  // e.g. 4 -> {4, 2}

}  // namespace dcp
