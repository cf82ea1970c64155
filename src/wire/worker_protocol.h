// What the supervisor tells a worker at start-up (the `config` message) and the
// message helpers both sides share. Field names are the JSON names.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "session_config.h"

namespace dcp {

struct WorkerConfig {
  SessionConfig session;
  std::string run_id;
  int device = 0;                 // CUDA ordinal of this rank's GPU (gpu backend)
  std::vector<int> dcp_sizes;     // one backend per size, built at start-up
  double gather_timeout_s = 120;  // backstop: the supervisor's deadlines fire first
};

nlohmann::json worker_config_to_json(const WorkerConfig& config);
WorkerConfig worker_config_from_json(const nlohmann::json& j);  // throws HarnessError

// The `bench` message (worker_bench.h describes it). `kernel`: the spec of the
// kernel to time ("stock", "direct" or a plugin's).
nlohmann::json make_bench_request(int index, const Case& c, const std::string& kernel,
                                  int ops_per_graph,
                                  int repeats, int replays, int warmup);

std::string_view to_string(FaultSpec::Kind kind);  // crash, hang, stall, corrupt, cuda_error, oom

// The extra seconds the supervisor waits past the per-call spin bound before it
// declares a rank stuck: the spin bound expires first on a healthy worker, so the
// worker's own trap message normally arrives before the supervisor acts.
inline constexpr double kDeadlineGraceS = 4.0;

}  // namespace dcp
