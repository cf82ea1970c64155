// When SM-pressure cases cannot run: with more than two ranks sharing one GPU
// under MPS the ranks' pressure kernels take the SMs the others' ops need, and
// a correct kernel's dispatch never starts (measured on one H200 at four
// ranks; two ranks under MPS and time-sliced ranks work: docs/DESIGN.md,
// "SM pressure"). The supervisor skips such cases by this reason and selftest
// calls the sm-pressure family's mutant not catchable there.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "session_config.h"

namespace dcp {

inline int most_ranks_per_gpu(const std::vector<int>& rank_gpu) {
  int most = 0;
  for (int g : rank_gpu) {
    most = std::max(most, static_cast<int>(std::count(rank_gpu.begin(), rank_gpu.end(), g)));
  }
  return most;
}

// "" when pressure cases can run in `env`.
inline std::string pressure_unrunnable_reason(const EnvironmentInfo& env) {
  const int ranks_per_gpu = most_ranks_per_gpu(env.rank_gpu);
  if (!mps_active(env) || ranks_per_gpu <= 2) return "";
  return fmt::format(
      "SM pressure with {} ranks sharing one GPU under MPS (their pressure kernels starve each "
      "other's ops; run it with --mps off, at most 2 ranks per GPU, or one GPU per rank)",
      ranks_per_gpu);
}

}  // namespace dcp
