// Runs litmus settings on one GPU (kernels/litmus.h) and tallies them
// (litmus_plan.h). The `processes` placement spawns a peer process of this
// binary (`dcp-check __litmus-peer`) that maps the reader's memory through
// CUDA IPC and runs the writer.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "litmus_plan.h"

namespace dcp {

struct LitmusDeviceInfo {
  int device = 0;
  std::string name;
  int sms = 0;
};

class LitmusRunner {
 public:
  // Selects `device` and allocates every buffer. Throws UsageError when there
  // is no CUDA device, HarnessError on any other CUDA failure.
  explicit LitmusRunner(int device);
  ~LitmusRunner();
  LitmusRunner(const LitmusRunner&) = delete;
  LitmusRunner& operator=(const LitmusRunner&) = delete;

  const LitmusDeviceInfo& info() const { return info_; }
  // Runs `test` under `stress` until at least `iterations` instances (one-shot)
  // or reader samples (counter) were tallied, or 8 counter rounds ran.
  LitmusTally run(const LitmusTest& test, const LitmusStress& stress, uint64_t iterations,
                  std::mt19937_64& rng);

 private:
  LitmusTally run_oneshot(const LitmusTest& test, const LitmusStress& stress,
                          uint64_t iterations, std::mt19937_64& rng);
  LitmusTally run_counter(const LitmusTest& test, const LitmusStress& stress,
                          uint64_t iterations, std::mt19937_64& rng);

  struct Buffers;
  LitmusDeviceInfo info_;
  Buffers* b_ = nullptr;
};

// `dcp-check __litmus-peer ARGS`: the writer of a `processes` counter test.
// Prints one line on stderr and returns 3 on failure.
int litmus_peer_main(int argc, char** argv);

}  // namespace dcp
