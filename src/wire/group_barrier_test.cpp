#include "group_barrier.h"

#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "errors.h"

namespace dcp {
namespace {

TEST_CASE("group barrier: nobody leaves round k before everyone arrived at it, many rounds") {
  constexpr int kRanks = 4, kRounds = 2000;
  BarrierSlot slot;
  std::atomic<int> arrived_total{0};
  std::atomic<int> early{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&] {
      for (int k = 0; k < kRounds; ++k) {
        arrived_total.fetch_add(1);
        wait_group_barrier(slot, kRanks, "case" + std::to_string(k), 30, nullptr);
        // Everyone arrived at round k: at least (k + 1) * kRanks arrivals counted.
        if (arrived_total.load() < (k + 1) * kRanks) early.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(early.load() == 0);
  CHECK(arrived_total.load() == kRanks * kRounds);
  CHECK(slot.arrived.load() == 0);  // reset for the next barrier
  CHECK(slot.generation.load() == static_cast<uint32_t>(kRounds));
}

TEST_CASE("group barrier: a rank at another barrier is refused, not paired") {
  BarrierSlot slot;
  std::thread first([&] {
    CHECK_THROWS_AS(wait_group_barrier(slot, 2, "case3-go", 0.3, nullptr), HarnessError);
  });
  while (slot.arrived.load() == 0) std::this_thread::yield();
  CHECK_THROWS_WITH_AS(wait_group_barrier(slot, 2, "case4-begin", 5, nullptr),
                       doctest::Contains("another barrier"), HarnessError);
  first.join();  // it timed out alone
}

TEST_CASE("group barrier: the poll runs while waiting and may end the wait") {
  BarrierSlot slot;
  int polls = 0;
  struct Stop {};
  CHECK_THROWS_AS(wait_group_barrier(slot, 2, "k", 10,
                                     [&] {
                                       if (++polls == 3) throw Stop{};
                                     }),
                  Stop);
  CHECK(polls == 3);
}

}  // namespace
}  // namespace dcp
