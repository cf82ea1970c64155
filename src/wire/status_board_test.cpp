#include "status_board.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "errors.h"

namespace dcp {
namespace {

std::string test_run_id(const char* tag) {
  return std::string("test") + tag + std::to_string(getpid());
}

TEST_CASE("the status board gives each rank its own zeroed page, shared across mappings") {
  const std::string id = test_run_id("board");
  {
    StatusBoard board = StatusBoard::create(id, 4);
    StatusBoard view = StatusBoard::open(id, 4);
    for (int r = 0; r < 4; ++r) {
      const auto addr = reinterpret_cast<uintptr_t>(board.entry(r));
      CHECK(addr % StatusBoard::entry_stride_bytes() == 0);
      CHECK(board.entry(r)->waiting == 0);
    }
    board.entry(2)->wait_epoch = 17;
    CHECK(view.entry(2)->wait_epoch == 17);
    CHECK_THROWS_AS(board.entry(4), HarnessError);
    CHECK_THROWS_AS(StatusBoard::create(id, 4), HarnessError);  // exclusive
  }
  // The creator unlinked the name.
  CHECK(shm_open(StatusBoard::shm_name(id).c_str(), O_RDONLY, 0) < 0);
  CHECK_THROWS_AS(StatusBoard::open(id, 4), HarnessError);
}

TEST_CASE("the status board name can go early while the mapping stays valid") {
  const std::string id = test_run_id("early");
  StatusBoard board = StatusBoard::create(id, 2);
  StatusBoard view = StatusBoard::open(id, 2);
  board.unlink_name();
  CHECK(shm_open(StatusBoard::shm_name(id).c_str(), O_RDONLY, 0) < 0);
  view.entry(1)->wait_epoch = 5;
  CHECK(board.entry(1)->wait_epoch == 5);
}

TEST_CASE("format_wait names the waiter, the source, slot, parity, epoch and flag") {
  WaitStatus s{};
  s.waiting = 1;
  s.wait_source = 1;
  s.wait_slot = 0;
  s.wait_parity = 1;
  s.wait_epoch = 17;
  s.wait_flag_value = 15;
  CHECK(format_wait(s, 2, 3) ==
        "rank 2 waits for rank 3 (slot 0, parity 1, epoch 17; flag holds 15)");
}

TEST_CASE("diagnose_waits maps group sources to global ranks and adds what the source signalled") {
  WaitStatus st[4] = {};
  // dcp2, group 1 = ranks {2, 3}: rank 2 waits for its group rank 1 (global 3).
  st[2].waiting = 1;
  st[2].wait_source = 1;
  st[2].wait_slot = 1;
  st[2].wait_parity = 1;
  st[2].wait_epoch = 17;
  st[2].wait_flag_value = 15;
  st[2].trapped = 1;
  st[3].last_signalled_epoch[1] = 16;
  std::vector<const WaitStatus*> entries = {&st[0], &st[1], &st[2], &st[3]};
  auto lines = diagnose_waits(entries, 2);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] ==
        "rank 2 waits for rank 3 (slot 1, parity 1, epoch 17; flag holds 15); rank 3 last "
        "signalled epoch 16 [spin bound expired]");
  // The same wait in a dcp4 case: group rank 1 is global rank 1.
  lines = diagnose_waits(entries, 4);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("rank 2 waits for rank 1 ", 0) == 0);
  st[2].waiting = 0;
  lines = diagnose_waits(entries, 2);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "no rank was waiting on a flag");
}

TEST_CASE("diagnose_waits with a launch record names dispatches that never started") {
  WaitStatus st[2] = {};
  // Rank 0 spins on slot 0 for rank 1's epoch 5; rank 1 started only epoch 3 there
  // and spins on slot 1 for rank 0's epoch 6, which rank 0 never started.
  st[0].waiting = 1;
  st[0].wait_source = 1;
  st[0].wait_slot = 0;
  st[0].wait_epoch = 5;
  st[0].wait_flag_value = 3;
  st[0].last_started_epoch[0] = 5;
  st[0].last_started_epoch[1] = 4;
  st[1].waiting = 1;
  st[1].wait_source = 0;
  st[1].wait_slot = 1;
  st[1].wait_epoch = 6;
  st[1].wait_flag_value = 4;
  st[1].last_started_epoch[0] = 3;
  st[1].last_started_epoch[1] = 6;
  const std::vector<const WaitStatus*> entries = {&st[0], &st[1]};
  auto lines = diagnose_waits(entries, 2, /*launch_record=*/true);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].find("rank 1's slot 0 dispatch of epoch 5 never started (last started 3) while "
                      "rank 1 spins on slot 1") != std::string::npos);
  CHECK(lines[1].find("rank 0's slot 1 dispatch of epoch 6 never started (last started 4) while "
                      "rank 0 spins on slot 0") != std::string::npos);
  CHECK(lines[2].rfind("forward-progress deadlock:", 0) == 0);
  // Without the record nothing is claimed.
  lines = diagnose_waits(entries, 2, false);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].find("never started") == std::string::npos);
  // A started dispatch (rank 1 began epoch 5, so it is only slow): no deadlock line.
  st[1].last_started_epoch[0] = 5;
  lines = diagnose_waits(entries, 2, true);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].find("never started") == std::string::npos);
  CHECK(lines[1].find("never started") != std::string::npos);
  // Wraparound: epoch 1 after the wrap is ahead of a last start at 0xFFFFFFFF.
  st[0].wait_epoch = 1;
  st[1].last_started_epoch[0] = 0xFFFFFFFFu;
  lines = diagnose_waits(entries, 2, true);
  CHECK(lines[0].find("never started (last started 4294967295)") != std::string::npos);
  // One-sided: rank 1 never started and is not spinning (no cycle): no deadlock line.
  st[1].waiting = 0;
  lines = diagnose_waits(entries, 2, true);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("never started (last started 4294967295) and rank 1 is not spinning") !=
        std::string::npos);
}

TEST_CASE("diagnose_waits leaves out the waits of ranks that moved on to a later case") {
  WaitStatus st[2] = {};
  st[0].waiting = 1;
  st[0].wait_source = 1;
  st[0].wait_epoch = 7;
  st[1].waiting = 1;  // rank 1 finished this case and waits in the next one
  st[1].wait_source = 0;
  st[1].wait_epoch = 9;
  const std::vector<const WaitStatus*> entries = {&st[0], &st[1]};
  const std::vector<bool> moved_on = {false, true};
  auto lines = diagnose_waits(entries, 2, false, &moved_on);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("rank 0 waits for rank 1 ", 0) == 0);
  CHECK(diagnose_waits(entries, 2, false).size() == 2);
  const std::vector<bool> both = {true, true};
  lines = diagnose_waits(entries, 2, false, &both);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "no rank was waiting on a flag");
}

}  // namespace
}  // namespace dcp
