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
  // Launches min(ceil(percent% of rank_sms), rank_sms - 1) blocks of 1024
  // threads, each with all the shared memory an SM allows one block, so each
  // holds one SM whole (no block of any size fits beside it) and the other
  // SMs stay free for any block (none when rank_sms < 2). Waits up to 200 ms
  // for them to be resident; blocks placed later leave at once, and when
  // some were left queued it relaunches with as many as became resident. (Two
  // 1024-thread blocks per SM held the SMs too, but blocks of fewer than 256
  // threads then waited for the pressure to end even with idle SMs left:
  // docs/DESIGN.md, "SM pressure".)
  // Returns one line: what was asked for and what became resident.
  std::string start(int percent);
  void stop();  // idempotent; waits for the pressure kernel to end
  bool running() const { return running_; }
  const std::string& note() const { return note_; }  // start()'s line, for messages

 private:
  int rank_;
  int rank_sms_ = 0;
  int device_sms_ = 0;
  uint64_t max_ns_;
  int shared_bytes_ = 0;  // dynamic shared memory per pressure block: all the SM allows
  Stream stream_;
  PressureControl* host_ = nullptr;  // mapped pinned
  PressureControl* dev_ = nullptr;   // its device alias
  DeviceBuffer words_;               // relay + poller claim (the probe's three words first)
  bool running_ = false;
  // Launches `blocks` pressure blocks, waits up to 200 ms for them to be
  // resident, closes admission; returns how many are.
  int launch_and_admit(int blocks);
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
