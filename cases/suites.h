// Named suites of cases. Every suite is a pure function of its options, so
// `dcp-check list` needs no GPU and workers can be sent case ids alone (an id
// is the whole case: replay never depends on the target that built the suite).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "case.h"

namespace dcp {

// Why a case cannot run on the target ("" when it can).
using SkipReasonFn = std::function<std::string(const Case&)>;

struct SuiteOptions {
  int world = 2;           // total ranks; dcp sizes are the divisors >= 2
  Geometry geometry;       // from a preset or custom flags
  uint64_t base_seed = 0;  // mixed into every case seed (--seed)
  // The target's rule (src/wire/run_target.h builds it from the kernel's
  // declaration and the session's facts). `default` covers every pair of
  // values that some case it allows holds; every suite's family cases that it
  // refuses only for a value the family does not test (output or LSE dtype,
  // LSE base, empty shards) take an allowed one. Null: every case runs, the
  // suites of the built-in kernel on one GPU per rank.
  SkipReasonFn skip_reason = {};
};

const std::vector<std::string>& suite_names();  // smoke, default, full, upstream, pressure, memstress
// Throws std::invalid_argument for an unknown suite.
std::vector<Case> build_suite(std::string_view suite, const SuiteOptions& opts);
std::vector<int> dcp_sizes_for_world(int world);  // e.g. 4 -> {4, 2}

}  // namespace dcp
