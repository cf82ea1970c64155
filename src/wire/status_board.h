// The status board: one page-aligned WaitStatus per rank in a POSIX
// shared-memory segment `/dcp-check-<run_id>-status`, created by the supervisor
// and mapped by every worker. A rank publishes what it waits on; the supervisor
// reads it at a deadline without the worker's help (the worker may be hung or
// dead). Every entry starts on its own page so the GPU backend can register a
// rank's page as mapped pinned memory without touching its neighbours.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "group_barrier.h"
#include "launch_table.h"
#include "wait_status.h"

namespace dcp {

class StatusBoard {
 public:
  // Supervisor: creates (exclusively) and zero-fills the segment.
  static StatusBoard create(const std::string& run_id, int world);
  // Worker: maps the segment the supervisor created.
  static StatusBoard open(const std::string& run_id, int world);
  static std::string shm_name(const std::string& run_id);
  static size_t entry_stride_bytes();  // the page size
  static size_t bytes_for(int world);   // rank entries, the barrier slots, the launch tables

  StatusBoard(StatusBoard&& other) noexcept;
  StatusBoard& operator=(StatusBoard&& other) noexcept;
  StatusBoard(const StatusBoard&) = delete;
  StatusBoard& operator=(const StatusBoard&) = delete;
  ~StatusBoard();  // unmaps; the creator also unlinks the name

  // Creator only: removes the name early (the mapping stays valid); idempotent.
  void unlink_name();
  WaitStatus* entry(int rank) const;
  // Nonzero (an InKernelMark) while the rank's worker is inside a function of
  // the kernel under test (a plugin's init, call, ...): a crash then is the
  // kernel's, not ours, and a hang names the function.
  volatile uint32_t* in_kernel(int rank) const;
  static constexpr size_t kInKernelOffset = 2048;
  // The barrier slot of DCP group `group_idx` of size `dcp_size` (after the
  // rank entries; zeroed by create).
  BarrierSlot* barrier_slot(int dcp_size, int group_idx) const;
  // What rank `rank`'s process launched on the GPU (launch_table.h; zeroed by
  // create: observation off until the worker's observer starts).
  LaunchTable* launch_table(int rank) const;
  int world() const { return world_; }

 private:
  StatusBoard() = default;
  void release();
  void* base_ = nullptr;
  size_t bytes_ = 0;
  int world_ = 0;
  std::string name_;
  bool owner_ = false;
};

// "rank 2 waits for rank 3 (slot 0, parity 1, epoch 17; flag holds 16)": one
// rank's wait, with the source given as a global rank. Used verbatim by the
// host backend's trap message and by the supervisor's diagnosis, so the two agree.
std::string format_wait(const WaitStatus& s, int rank, int source_global_rank);

// The supervisor's hang diagnosis for a case of dcp size `dcp_size`: one line
// per waiting rank, "<format_wait>; rank 3 last signalled epoch 16", or a line
// saying no rank was waiting on a flag. `entries[r]` is rank r's status. With
// `launch_record` (the kernel writes last_started_epoch) a line also says when
// the awaited dispatch never started, and what its rank spins on instead (or
// that it is not spinning); when every waiting rank awaits a dispatch held up
// on a rank spinning on another slot (a cycle), a last line names the
// forward-progress deadlock.
// `moved_on[r]` (when given): rank r finished this case and began a later one
// (sent ahead), so its wait belongs to that case and is left out.
std::vector<std::string> diagnose_waits(const std::vector<const WaitStatus*>& entries,
                                        int dcp_size, bool launch_record = false,
                                        const std::vector<bool>* moved_on = nullptr);

}  // namespace dcp
