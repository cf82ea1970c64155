// A fixed-size pool of std::threads for the checker's row loop. The calling
// thread works too: a pool of N threads has N - 1 workers, and a pool of 1
// runs everything inline (no thread is ever started).
//
// parallel_for(n, chunks, body) splits [0, n) into `chunks` contiguous ranges,
// fixed by n and chunks alone (chunk i is [n*i/chunks, n*(i+1)/chunks)), and
// calls body(i, begin, end) once for each, on any thread, so that callers can
// keep per-chunk results and merge them in chunk order, whatever the
// schedule. It returns when every chunk has finished. If bodies throw, the
// chunks not yet started are skipped and the exception of the lowest-numbered
// chunk that threw is rethrown in the caller.
//
// Several threads may call parallel_for on one pool at once (ranks of the
// host backend share a process); their chunks share the workers and each
// caller also runs its own, so a call never waits for a free worker, and a
// body may itself call parallel_for.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dcp {

class ThreadPool {
 public:
  using Body = std::function<void(int chunk, int64_t begin, int64_t end)>;

  explicit ThreadPool(int num_threads);  // clamped to >= 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  void parallel_for(int64_t n, int chunks, const Body& body);

  // One process-wide pool per size, started on first use and kept until exit.
  static ThreadPool& shared(int num_threads);

 private:
  struct Job;
  void worker_loop();
  bool run_one(Job& job, std::unique_lock<std::mutex>& lock);  // false: nothing left to claim

  std::mutex mu_;
  std::condition_variable work_cv_;  // a job was queued, or stop_
  std::condition_variable done_cv_;  // a chunk finished
  std::deque<Job*> queue_;           // jobs with chunks left to claim
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// CPUs this process may run on: the affinity mask's count where the system
// has one (a container or taskset limits it), else hardware_concurrency; >= 1.
int available_cpus();

}  // namespace dcp
