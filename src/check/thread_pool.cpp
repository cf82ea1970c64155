#include "thread_pool.h"

#include <algorithm>
#include <exception>
#include <map>
#include <memory>

#if defined(__linux__)
#include <sched.h>
#endif

namespace dcp {

struct ThreadPool::Job {
  const Body* body = nullptr;
  int64_t n = 0;
  int chunks = 0;
  int next = 0;      // next chunk to claim (under mu_)
  int finished = 0;  // chunks done or skipped (under mu_)
  int error_chunk = -1;
  std::exception_ptr error;
};

ThreadPool::ThreadPool(int num_threads) {
  const int workers = std::max(1, num_threads) - 1;
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

// Claims the next chunk of `job` and runs it with the lock released. Called
// with the lock held; returns with it held.
bool ThreadPool::run_one(Job& job, std::unique_lock<std::mutex>& lock) {
  if (job.next >= job.chunks) return false;
  const int i = job.next++;
  if (job.next == job.chunks) {  // the last chunk is claimed: nothing left to queue
    const auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
  }
  std::exception_ptr error;
  if (job.error == nullptr) {  // after a failure the remaining chunks are skipped
    lock.unlock();
    const int64_t begin = job.n * i / job.chunks, end = job.n * (i + 1) / job.chunks;
    try {
      (*job.body)(i, begin, end);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
  }
  if (error != nullptr && (job.error == nullptr || i < job.error_chunk)) {
    job.error = error;
    job.error_chunk = i;
  }
  if (++job.finished == job.chunks) done_cv_.notify_all();
  return true;
}

void ThreadPool::worker_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and no work left
    run_one(*queue_.front(), lock);
  }
}

void ThreadPool::parallel_for(int64_t n, int chunks, const Body& body) {
  if (n <= 0) return;
  chunks = static_cast<int>(std::clamp<int64_t>(chunks, 1, n));
  if (workers_.empty() || chunks == 1) {
    // Inline, with the same chunking and error rule as the pooled path.
    for (int i = 0; i < chunks; ++i) body(i, n * i / chunks, n * (i + 1) / chunks);
    return;
  }
  Job job;
  job.body = &body;
  job.n = n;
  job.chunks = chunks;
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(&job);
  work_cv_.notify_all();
  while (run_one(job, lock)) {
  }
  done_cv_.wait(lock, [&job] { return job.finished == job.chunks; });
  lock.unlock();
  if (job.error != nullptr) std::rethrow_exception(job.error);
}

ThreadPool& ThreadPool::shared(int num_threads) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  num_threads = std::max(1, num_threads);
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<ThreadPool>& pool = pools[num_threads];
  if (!pool) pool = std::make_unique<ThreadPool>(num_threads);
  return *pool;
}

int available_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace dcp
