#include "check_thread.h"

#include <doctest/doctest.h>

#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

namespace dcp {
namespace {

TEST_CASE("a check thread runs tasks in the order posted, on one thread not the caller's") {
  CheckThread checks;
  std::vector<int> order;  // written by the check thread only
  std::vector<std::future<std::thread::id>> ran_on;
  for (int i = 0; i < 50; ++i) {
    std::packaged_task<std::thread::id()> task([&order, i] {
      order.push_back(i);
      return std::this_thread::get_id();
    });
    ran_on.push_back(task.get_future());
    checks.post(std::move(task));
  }
  const std::thread::id first = ran_on.front().get();
  CHECK(first != std::this_thread::get_id());
  for (size_t i = 1; i < ran_on.size(); ++i) CHECK(ran_on[i].get() == first);
  REQUIRE(order.size() == 50);
  for (int i = 0; i < 50; ++i) CHECK(order[static_cast<size_t>(i)] == i);
}

TEST_CASE("a task's exception reaches its future, and later tasks still run") {
  CheckThread checks;
  std::packaged_task<int()> bad([]() -> int { throw std::runtime_error("check failed"); });
  std::packaged_task<int()> good([] { return 7; });
  std::future<int> b = bad.get_future(), g = good.get_future();
  checks.post(std::move(bad));
  checks.post(std::move(good));
  CHECK_THROWS_WITH_AS(b.get(), "check failed", std::runtime_error);
  CHECK(g.get() == 7);
}

TEST_CASE("each thread has its own check thread, kept across uses") {
  CheckThread* mine = &CheckThread::for_this_thread();
  CHECK(mine == &CheckThread::for_this_thread());
  CheckThread* other = nullptr;
  std::thread([&other] { other = &CheckThread::for_this_thread(); }).join();
  CHECK(other != mine);
}

TEST_CASE("tasks posted before destruction run before it returns") {
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  int ran = 0;
  {
    CheckThread checks;
    for (int i = 0; i < 3; ++i) {
      checks.post(std::packaged_task<void()>([open, &ran] {
        open.wait();  // so some may still be queued when the destructor begins
        ++ran;
      }));
    }
    gate.set_value();
  }
  CHECK(ran == 3);
}

}  // namespace
}  // namespace dcp
