#include "run_target.h"

#include <fmt/format.h>

#include <algorithm>

#include "pressure_rule.h"

namespace dcp {

RunTarget run_target(const SessionConfig& config) {
  RunTarget t;
  t.kernels.clear();
  for (const KernelInfo* k : config.kernels()) t.kernels.push_back(*k);
  t.world = config.world;
  t.host_backend = config.backend == BackendKind::kHost;
  return t;
}

RunTarget run_target(const SessionConfig& config, const EnvironmentInfo& env) {
  RunTarget t = run_target(config);
  t.ranks_share_gpu = env.ranks_share_gpu;
  t.pressure_unrunnable = pressure_unrunnable_reason(env);
  return t;
}

std::string run_skip_reason(const RunTarget& t, const Case& c) {
  const std::vector<int> sizes = dcp_sizes_for_world(t.world);
  if (std::find(sizes.begin(), sizes.end(), c.dcp_size) == sizes.end()) {
    return fmt::format("not run: dcp size {} does not divide --world {}", c.dcp_size, t.world);
  }
  if (c.pressure > 0 && t.host_backend) {
    return "not run: SM pressure needs the GPU backend (the host model has no SMs)";
  }
  if (c.mstress && t.host_backend) {
    return "not run: memory stress needs the GPU backend (the host model has no GPU memory system)";
  }
  if (c.pressure > 0 && !t.pressure_unrunnable.empty()) {
    return "not run: " + t.pressure_unrunnable;
  }
  // Decided from the kernels' declarations before any rank enters the exchange.
  for (const KernelInfo& k : t.kernels) {
    if (std::string why = case_skip_reason(k, c, t.ranks_share_gpu); !why.empty()) return why;
  }
  return "";
}

SkipReasonFn skip_reason_fn(const RunTarget& t) {
  return [t](const Case& c) { return run_skip_reason(t, c); };
}

}  // namespace dcp
