// What a rank is doing in the protocol, published where the supervisor can read
// it without the worker's help (a shared-memory status board; on the GPU the
// pages are registered as mapped pinned memory so the device writes them).
// Plain C++: included by kernels, the host model and the supervisor.
//
// Invariant: the device side and the host deadline both report from this one
// record, so a trap message and a supervisor diagnosis always agree.
#pragma once

#include <cstdint>

namespace dcp {

inline constexpr int kMaxSlots = 2;  // ubatch slots per workspace (DBO uses 2)

struct WaitStatus {
  // Set while a combine spins on a flag; cleared when the wait ends.
  volatile uint32_t waiting;
  volatile uint32_t wait_source;      // group rank being waited on
  volatile uint32_t wait_slot;
  volatile uint32_t wait_parity;
  volatile uint32_t wait_epoch;       // epoch the flag must reach
  volatile uint32_t wait_flag_value;  // what the flag held at the last read
  // Per slot: the last epoch this rank's dispatch signalled to every peer, and
  // the last epoch whose combine finished.
  volatile uint32_t last_signalled_epoch[kMaxSlots];
  volatile uint32_t last_completed_epoch[kMaxSlots];
  volatile uint32_t trapped;          // 1 after the bounded spin gave up
  uint32_t reserved[5];
};

}  // namespace dcp
