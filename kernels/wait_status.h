// What a rank is doing in the protocol, published where the supervisor can read
// it without the worker's help (a shared-memory status board; on the GPU the
// pages are registered as mapped pinned memory so the device writes them).
// Plain C++: included by kernels, the host model and the supervisor.
//
// Invariant: the device side and the host deadline both report from this one
// record, so a trap message and a supervisor diagnosis always agree.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dcp_kernel_plugin.h"

namespace dcp {

inline constexpr int kMaxSlots = 2;  // ubatch slots per workspace (DBO uses 2)

// The record is the plugin ABI's (kernels/dcp_kernel_plugin.h), so the built-in
// kernels and plugins publish the same fields.
using WaitStatus = dcpWaitStatus_v1;
static_assert(kMaxSlots == DCP_WAIT_STATUS_SLOTS);
// A fixed v1 record: its size and the places of its fields never move.
static_assert(sizeof(WaitStatus) == 64);
static_assert(offsetof(WaitStatus, trapped) == 40);
static_assert(offsetof(WaitStatus, last_started_epoch) == 44);

// After a set_epoch (quiescent, nothing writes the record): slot `slot`'s
// started, signalled and completed epochs restart at `epoch`, so the
// diagnosis compares against this case's epochs.
inline void restart_slot_record(WaitStatus& s, int slot, uint32_t epoch) {
  s.last_started_epoch[slot] = epoch;
  s.last_signalled_epoch[slot] = epoch;
  s.last_completed_epoch[slot] = epoch;
}

// Every slot's record restarted at `epoch` (a fresh context: its slots start there).
inline void restart_slot_records(WaitStatus& s, uint32_t epoch) {
  for (int slot = 0; slot < kMaxSlots; ++slot) restart_slot_record(s, slot, epoch);
}

// What a rank's in_kernel mark says it is inside.
enum InKernelMark : uint32_t {
  kInKernelNone = 0,
  kInKernelOther = 1,  // call, get_workspace, set_epoch, last_error
  kInKernelInit = 2,
  kInKernelFinalize = 3,
};
// "init", "finalize", or "" for any other function (or none).
inline const char* in_kernel_function(uint32_t mark) {
  return mark == kInKernelInit ? "init" : mark == kInKernelFinalize ? "finalize" : "";
}

// Sets the status-board mark (when there is one) for the duration of one
// function of the kernel under test.
class InKernelScope {
 public:
  explicit InKernelScope(volatile uint32_t* mark, uint32_t what = kInKernelOther) : mark_(mark) {
    if (mark_ != nullptr) *mark_ = what;
  }
  ~InKernelScope() {
    if (mark_ != nullptr) *mark_ = kInKernelNone;
  }
  InKernelScope(const InKernelScope&) = delete;
  InKernelScope& operator=(const InKernelScope&) = delete;

 private:
  volatile uint32_t* mark_;
};

}  // namespace dcp
