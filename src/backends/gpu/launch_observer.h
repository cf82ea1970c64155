// Observes every kernel this worker process launches, the kernel under test's
// included, with CUPTI's callback API (the field's own tool; libcupti is
// dlopen()ed, so the binary runs without it): name, grid, block, dynamic shared
// memory, stream, the function's occupancy, and an event recorded right after
// the launch on its stream, which tells its completion even while another
// kernel spins. Records go to this rank's LaunchTable (wire/launch_table.h),
// which the supervisor reads at a hang (wire/launch_diagnosis.h). No help from
// the kernel: a plugin that publishes nothing is observed like ours.
//
// One observer per process (CUPTI allows one subscriber). Every function is a
// no-op while observation is off.
#pragma once

#include <cstdint>
#include <string>

#include "launch_table.h"

namespace dcp::launch_observer {

// Starts observing into `table` (before the process's first CUDA call is
// best). `in_kernel`: the rank's status-board mark, set while a function of
// the kernel under test runs (its launches are kKernel). Returns "" when on,
// else why it is off (also in table->note); never throws.
std::string start(LaunchTable* table, const volatile uint32_t* in_kernel);
void stop();  // unsubscribes and ends the observer thread; idempotent
bool active();

// The case whose launches follow (the worker's case index).
void set_case(int case_index);

// The op this thread enqueues until the scope ends (every launch inside it,
// dcp-check's and the kernel's, is labelled with it).
class OpScope {
 public:
  OpScope(int op_idx, int slot, int dcp_size);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  int saved_[3];
};

// dcp-check's own launches after the op (the device checker): not observed
// while the scope lives on this thread (they cannot hang, and each observed
// launch costs an event record).
class Unobserved {
 public:
  Unobserved();
  ~Unobserved();
  Unobserved(const Unobserved&) = delete;
  Unobserved& operator=(const Unobserved&) = delete;

 private:
  bool saved_;
};

// A label for a stream in messages ("dcp2 slot 1").
void name_stream(const void* stream, const std::string& label);
// SMs an SM-pressure kernel holds from now on (0: none).
void set_pressure_sms(int sms);
// Regions dumped at a hang (CONTROL, and small LOCAL ones): `owner` removes
// them again before they are freed.
void add_dump_region(const void* owner, int dcp_size, int context, const std::string& name,
                     bool local, const void* device_ptr, uint64_t bytes);
void remove_dump_regions(const void* owner);

}  // namespace dcp::launch_observer
