// The host side of SM pressure (Case::pressure, kernels/sm_pressure.h): one
// per GPU backend. start() occupies `percent` of the SMs this rank may use
// with the pressure kernel on a stream of its own and waits (bounded) until
// its blocks are resident; stop() ends it. Between the two, nothing on this
// rank may synchronise the whole device (cudaFree, cudaDeviceSynchronize):
// the pressure kernel would hold it up to its own time bound.
#pragma once

#include <cstdint>
#include <string>

#include "cuda_raii.h"
#include "sm_pressure.h"

namespace dcp {

class SmPressure {
 public:
  SmPressure(int device, int rank, double spin_timeout_s);
  ~SmPressure();
  SmPressure(const SmPressure&) = delete;
  SmPressure& operator=(const SmPressure&) = delete;

  // The SMs this rank may use, measured once at construction (a probe grid of
  // 1024-thread blocks: how many are resident at once, two per SM); under
  // MPS with an active thread percentage, the client's share.
  int rank_sms() const { return rank_sms_; }
  int device_sms() const { return device_sms_; }
  // Launches min(ceil(percent% of rank_sms), rank_sms - 1) * 2 blocks of 1024
  // threads (none when rank_sms < 2) and waits
  // up to 200 ms for them to be resident; blocks placed later leave at once.
  // Returns one line: what was asked for and what became resident.
  // Shape: kPairs holds an SM with two 1024-thread blocks (its thread
  // slots); kSharedMemory with one 1024-thread block that takes the SM's
  // shared memory (a block of any size needs some, so none fits beside it).
  enum class Shape { kPairs, kSharedMemory };
  std::string start(int percent, Shape shape = Shape::kPairs);
  void stop();  // idempotent; waits for the pressure kernel to end
  bool running() const { return running_; }
  const std::string& note() const { return note_; }  // start()'s line, for messages

 private:
  int rank_;
  int rank_sms_ = 0;
  int device_sms_ = 0;
  uint64_t max_ns_;
  int shared_bytes_ = 0;  // the opt-in maximum per block, for Shape::kSharedMemory
  Stream stream_;
  PressureControl* host_ = nullptr;  // mapped pinned
  PressureControl* dev_ = nullptr;   // its device alias
  DeviceBuffer words_;               // relay + poller claim (the probe's three words first)
  bool running_ = false;
  std::string note_;
};

// Stops the pressure on every exit from a batch.
class PressureScope {
 public:
  explicit PressureScope(SmPressure* p) : p_(p) {}
  ~PressureScope() {
    if (p_ != nullptr) p_->stop();
  }
  PressureScope(const PressureScope&) = delete;
  PressureScope& operator=(const PressureScope&) = delete;

 private:
  SmPressure* p_;
};

}  // namespace dcp
