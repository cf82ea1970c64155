#include "check_thread.h"

#include <utility>

namespace dcp {

CheckThread::CheckThread() : thread_([this] { loop(); }) {}

CheckThread::~CheckThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void CheckThread::post(std::packaged_task<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void CheckThread::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stop_, and nothing left to run
    std::packaged_task<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();  // an exception goes to the task's future
    lock.lock();
  }
}

CheckThread& CheckThread::for_this_thread() {
  thread_local CheckThread thread;
  return thread;
}

}  // namespace dcp
