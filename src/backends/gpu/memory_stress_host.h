// The host side of memory stress (Case::mstress, kernels/litmus.h): one per
// GPU backend, made by the first memory-stress case. Before each call (eager)
// or batch (pipelined) kick() launches the stress kernel on a stream of its
// own, so it overlaps the calls; each call's stream then counts its op done
// (release(), right after the op). The stress stops when every call it was
// kicked for has released it, or at its time bound, whichever comes first:
// it covers the ops, not what follows them (the check, the next cases), and
// nothing on the host waits for a stop. A device-wide synchronisation (a
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
  // Stress for `calls` calls: until each released it, at most
  // kStressNsPerCall each.
  void kick(int calls);
  // One call's op is done (stream-ordered on `call_stream`, after the op).
  void release(cudaStream_t call_stream);
  const std::string& note() const { return note_; }  // "memory stress: st-st on 8 KiB ..."

  // Long enough to cover a call's dispatch, wait and combine at the largest
  // geometry, short enough that a time-sliced peer is not held up for long.
  static constexpr uint64_t kStressNsPerCall = 2'000'000;

 private:
  int rank_;
  LitmusStress stress_;
  Stream stream_;
  DeviceBuffer scratch_;
  DeviceBuffer released_;  // u32: releases done on the device
  uint32_t releases_ = 0;  // releases enqueued so far (the device's count catches up)
  std::string note_;
};

}  // namespace dcp
