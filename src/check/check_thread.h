// One long-lived thread that runs posted tasks in the order they were posted:
// the check of batch k beside batch k + 1. It replaces std::async, which
// started (and joined) a thread per batch, tens of microseconds each on the
// runner's path. Each calling thread gets its own (for_this_thread()), so the
// ranks of the host backend, a thread each in one process, never queue
// behind one another, and a rank's checks still run one at a time.
#pragma once

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

namespace dcp {

class CheckThread {
 public:
  CheckThread();
  ~CheckThread();  // runs what was posted, then joins
  CheckThread(const CheckThread&) = delete;
  CheckThread& operator=(const CheckThread&) = delete;

  // Runs `task` after every task posted before it; its future carries the
  // result or the exception.
  void post(std::packaged_task<void()> task);
  template <typename R>
  void post(std::packaged_task<R()> task) {
    post(std::packaged_task<void()>([t = std::move(task)]() mutable { t(); }));
  }

  // The calling thread's, started on its first use and joined when that
  // thread exits.
  static CheckThread& for_this_thread();

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace dcp
