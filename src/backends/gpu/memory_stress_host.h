// The host side of memory stress (Case::mstress, kernels/litmus.h): one per
// GPU backend, made by the first memory-stress case. Before each call (eager)
// or batch (pipelined) kick() launches the stress kernel on a stream of its
// own, bounded in time to cover the calls, so it overlaps them and ends by
// itself: nothing waits for a stop, and a device-wide synchronisation (a
// kernel's first launch, cudaFree) waits at most that bound.
#pragma once

#include <cstdint>
#include <string>

#include "cuda_raii.h"
#include "memory_stress_config.h"

namespace dcp {

class MemoryStress {
 public:
  // config.stress.blocks is per SM; the device's SM count multiplies it.
  MemoryStress(int device, int rank, const MemoryStressConfig& config);
  // Stress for `calls` calls: kStressNsPerCall each.
  void kick(int calls);
  const std::string& note() const { return note_; }  // "memory stress: st-st on 8 KiB ..."

  // Long enough to cover a call's dispatch, wait and combine at the largest
  // geometry, short enough that a time-sliced peer is not held up for long.
  static constexpr uint64_t kStressNsPerCall = 2'000'000;

 private:
  int rank_;
  LitmusStress stress_;
  Stream stream_;
  DeviceBuffer scratch_;
  std::string note_;
};

}  // namespace dcp
