#include "status_board.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "errors.h"

namespace dcp {
namespace {

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// One slot per (dcp size, group index): index dcp_size * world + group_idx.
size_t barrier_slots(int world) { return static_cast<size_t>(world + 1) * world; }

size_t round_to_pages(size_t bytes) { return (bytes + page_size() - 1) / page_size() * page_size(); }

size_t barrier_bytes(int world) { return round_to_pages(sizeof(BarrierSlot) * barrier_slots(world)); }

}  // namespace

std::string StatusBoard::shm_name(const std::string& run_id) {
  return fmt::format("/dcp-check-{}-status", run_id);
}

size_t StatusBoard::bytes_for(int world) {
  return entry_stride_bytes() * static_cast<size_t>(world) + barrier_bytes(world) +
         round_to_pages(sizeof(LaunchTable) * static_cast<size_t>(world));
}

BarrierSlot* StatusBoard::barrier_slot(int dcp_size, int group_idx) const {
  const size_t index = static_cast<size_t>(dcp_size) * world_ + group_idx;
  DCP_CHECK(dcp_size >= 1 && dcp_size <= world_ && group_idx >= 0 && index < barrier_slots(world_),
            HarnessError, "no barrier slot for group {} of size {} at world {}", group_idx,
            dcp_size, world_);
  auto* first = reinterpret_cast<BarrierSlot*>(static_cast<char*>(base_) +
                                               entry_stride_bytes() * static_cast<size_t>(world_));
  return first + index;
}

LaunchTable* StatusBoard::launch_table(int rank) const {
  DCP_CHECK(rank >= 0 && rank < world_ && base_ != nullptr, HarnessError,
            "status board has no launch table for rank {}", rank);
  auto* first = reinterpret_cast<LaunchTable*>(static_cast<char*>(base_) +
                                               entry_stride_bytes() * static_cast<size_t>(world_) +
                                               barrier_bytes(world_));
  return first + rank;
}

size_t StatusBoard::entry_stride_bytes() {
  static_assert(sizeof(WaitStatus) <= 4096, "a WaitStatus must fit in one page");
  return page_size();
}

StatusBoard StatusBoard::create(const std::string& run_id, int world) {
  StatusBoard board;
  board.name_ = shm_name(run_id);
  board.world_ = world;
  board.bytes_ = bytes_for(world);
  int fd = shm_open(board.name_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  DCP_CHECK(fd >= 0, HarnessError, "cannot create shared memory {}: {}", board.name_,
            std::strerror(errno));
  board.owner_ = true;  // from here on the destructor unlinks the name
  int rc = ftruncate(fd, static_cast<off_t>(board.bytes_));
  int err = errno;
  if (rc == 0) {
    board.base_ = mmap(nullptr, board.bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    err = errno;
  }
  close(fd);
  DCP_CHECK(rc == 0 && board.base_ != MAP_FAILED, HarnessError,
            "cannot size or map shared memory {} ({} bytes): {}", board.name_, board.bytes_,
            std::strerror(err));
  std::memset(board.base_, 0, board.bytes_);
  return board;
}

StatusBoard StatusBoard::open(const std::string& run_id, int world) {
  StatusBoard board;
  board.name_ = shm_name(run_id);
  board.world_ = world;
  board.bytes_ = bytes_for(world);
  int fd = shm_open(board.name_.c_str(), O_RDWR | O_CLOEXEC, 0600);
  DCP_CHECK(fd >= 0, HarnessError, "cannot open shared memory {}: {}", board.name_,
            std::strerror(errno));
  struct stat st {};
  bool sized = fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= board.bytes_;
  if (sized) board.base_ = mmap(nullptr, board.bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  DCP_CHECK(sized, HarnessError, "shared memory {} is smaller than {} ranks", board.name_, world);
  DCP_CHECK(board.base_ != MAP_FAILED, HarnessError, "cannot map shared memory {}: {}", board.name_,
            std::strerror(err));
  return board;
}

StatusBoard::StatusBoard(StatusBoard&& other) noexcept { *this = std::move(other); }

StatusBoard& StatusBoard::operator=(StatusBoard&& other) noexcept {
  if (this != &other) {
    release();
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    world_ = std::exchange(other.world_, 0);
    name_ = std::move(other.name_);
    owner_ = std::exchange(other.owner_, false);
  }
  return *this;
}

StatusBoard::~StatusBoard() { release(); }

void StatusBoard::unlink_name() {
  if (owner_) shm_unlink(name_.c_str());
  owner_ = false;
}

void StatusBoard::release() {
  if (base_ != nullptr && base_ != MAP_FAILED) munmap(base_, bytes_);
  base_ = nullptr;
  unlink_name();
}

WaitStatus* StatusBoard::entry(int rank) const {
  DCP_CHECK(rank >= 0 && rank < world_ && base_ != nullptr, HarnessError,
            "status board has no entry for rank {}", rank);
  return reinterpret_cast<WaitStatus*>(static_cast<char*>(base_) +
                                       entry_stride_bytes() * static_cast<size_t>(rank));
}

// Past the WaitStatus in the rank's page (the page is registered for the
// device, the mark is only ever touched by the host).
volatile uint32_t* StatusBoard::in_kernel(int rank) const {
  static_assert(sizeof(WaitStatus) <= kInKernelOffset);
  return reinterpret_cast<volatile uint32_t*>(reinterpret_cast<uint8_t*>(entry(rank)) +
                                              kInKernelOffset);
}

std::string format_wait(const WaitStatus& s, int rank, int source_global_rank) {
  return fmt::format("rank {} waits for rank {} (slot {}, parity {}, epoch {}; flag holds {})",
                     rank, source_global_rank, s.wait_slot, s.wait_parity, s.wait_epoch,
                     s.wait_flag_value);
}

std::vector<std::string> diagnose_waits(const std::vector<const WaitStatus*>& entries,
                                        int dcp_size, bool launch_record,
                                        const std::vector<bool>* moved_on) {
  std::vector<std::string> lines;
  const int world = static_cast<int>(entries.size());
  int waiting = 0, never_started = 0;
  for (int r = 0; r < world; ++r) {
    const WaitStatus& s = *entries[r];
    if (!s.waiting) continue;
    if (moved_on != nullptr && r < static_cast<int>(moved_on->size()) && (*moved_on)[r]) continue;
    ++waiting;
    const int group_base = dcp_size > 0 ? r / dcp_size * dcp_size : 0;
    const int src = group_base + static_cast<int>(s.wait_source);
    std::string line = format_wait(s, r, src);
    if (src >= 0 && src < world && s.wait_slot < static_cast<uint32_t>(kMaxSlots)) {
      const WaitStatus& peer = *entries[src];
      line += fmt::format("; rank {} last signalled epoch {}", src,
                          peer.last_signalled_epoch[s.wait_slot]);
      // Wraparound-safe: the awaited epoch is ahead of the last one started.
      const uint32_t started = peer.last_started_epoch[s.wait_slot];
      if (launch_record && static_cast<int32_t>(s.wait_epoch - started) > 0) {
        line += fmt::format("; rank {}'s slot {} dispatch of epoch {} never started (last started {})",
                            src, s.wait_slot, s.wait_epoch, started);
        if (peer.waiting && peer.wait_slot != s.wait_slot) {
          ++never_started;  // held up while its rank spins elsewhere: part of a cycle
          line += fmt::format(" while rank {} spins on slot {}", src, peer.wait_slot);
        } else if (!peer.waiting) {
          line += fmt::format(" and rank {} is not spinning", src);
        }
      }
    }
    if (s.trapped) line += " [spin bound expired]";
    lines.push_back(std::move(line));
  }
  if (lines.empty()) lines.push_back("no rank was waiting on a flag");
  // Only a cycle is named: every waiting rank awaits a dispatch that never
  // started on a rank that itself spins on another slot.
  if (waiting > 0 && never_started == waiting) {
    lines.push_back(
        "forward-progress deadlock: every awaited dispatch never started while its rank spins "
        "on another slot, queued behind spinning blocks that hold the SMs it needs (a spinning "
        "kernel must not fill the SMs its peers' progress depends on)");
  }
  return lines;
}

}  // namespace dcp
