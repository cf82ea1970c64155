// `--mps auto|on|off`. Ranks sharing a GPU time-slice unless an MPS
// daemon lets them run concurrently.
//   on:   ranks share a GPU -> start a private control daemon for this run
//         (pipe and log directories inside the run directory) and stop it on
//         every exit path; the binary missing is a usage error.
//   auto: join a daemon the user already runs (reachable through
//         $CUDA_MPS_PIPE_DIRECTORY or /tmp/nvidia-mps), else time-slice.
//   off:  never; CUDA_MPS_* is removed from the workers' environment, and a
//         user daemon at the default location is hidden from them.
// Starvation guard: under MPS every worker gets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
// = max(10, 100 / ranks_per_gpu), floored to hundredths (12.5 at 8 ranks: MPS
// takes a fraction, and grants whole TPCs, rounding down: 16 of 132 SMs where
// 12 gave 14), so the ranks' shares never add up to more than the GPU and
// spinning combine blocks of one rank can never keep a peer's dispatch from running.
// GPU settings (compute mode, clocks, persistence) are never touched.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "session.h"

namespace dcp {

std::string mps_thread_percentage(int ranks_per_gpu);  // "12.5", "33.33", "50"

class MpsController {
 public:
  // Decides the mode and, for `on` with shared GPUs, starts the private daemon.
  // run_dir must exist and outlive this object.
  MpsController(MpsMode mode, bool gpu_backend, int world, int num_gpus,
                const std::string& run_dir);
  MpsController(const MpsController&) = delete;
  MpsController& operator=(const MpsController&) = delete;
  ~MpsController();  // stop()

  // Quits a private daemon (bounded), then kills any process still carrying its
  // pipe directory in its environment (the control daemon and its server).
  // Idempotent. Call after every worker is gone.
  void stop();

  const std::string& description() const { return description_; }  // for EnvironmentInfo
  const std::vector<std::pair<std::string, std::string>>& worker_env() const { return set_; }
  const std::vector<std::string>& worker_unset() const { return unset_; }

 private:
  void start_private_daemon(const std::string& run_dir, const std::string& percentage);

  std::string description_;
  std::vector<std::pair<std::string, std::string>> set_;
  std::vector<std::string> unset_;
  std::string control_binary_;
  std::string pipe_dir_;  // non-empty while a private daemon may be running
  std::string log_dir_;
};

}  // namespace dcp
