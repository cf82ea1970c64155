#include "phase_times.h"

#include <doctest/doctest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace dcp {

// DCP_PHASE_CLOCK=cpu laps thread_cpu_ms: it must count the calling thread
// only. A thread blocked on a condition variable while this one spins for
// 20 ms of its own CPU gains almost none.
TEST_CASE("thread_cpu_ms counts the calling thread's CPU, not the process's") {
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false, done = false;
  double blocked_ms = -1;
  std::thread other([&] {
    const double start = thread_cpu_ms();
    std::unique_lock<std::mutex> lock(mu);
    ready = true;
    cv.notify_all();
    cv.wait(lock, [&] { return done; });
    blocked_ms = thread_cpu_ms() - start;
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return ready; });
  }
  const double process_start = process_cpu_ms();
  const double start = thread_cpu_ms();
  volatile uint64_t sink = 0;
  while (thread_cpu_ms() - start < 20.0) sink = sink + 1;
  const double spun_ms = thread_cpu_ms() - start;
  {
    const std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  other.join();
  CHECK(spun_ms >= 20.0);
  CHECK(process_cpu_ms() - process_start >= spun_ms);
  CHECK(blocked_ms >= 0);
  CHECK(blocked_ms < 5.0);  // a wake-up or two, not the spinner's 20 ms
}

TEST_CASE("a PhaseClock adds each lap to the phase it is given") {
  PhaseClock clock;
  double a = 0, b = 0;
  clock.lap(a);
  const double after_a = a;
  volatile uint64_t sink = 0;
  for (int i = 0; i < 100000; ++i) sink = sink + 1;
  clock.lap(b);
  CHECK(after_a >= 0);
  CHECK(b > 0);
  CHECK(a == after_a);  // the second lap went to b only
}

}  // namespace dcp
