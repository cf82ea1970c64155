#include "thread_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace dcp {
namespace {

// Runs parallel_for and records which chunk saw which index.
std::vector<int> chunk_of_each(ThreadPool& pool, int64_t n, int chunks) {
  std::vector<int> owner(static_cast<size_t>(n), -1);
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  pool.parallel_for(n, chunks, [&](int chunk, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      owner[static_cast<size_t>(i)] = chunk;
      visits[static_cast<size_t>(i)].fetch_add(1);
    }
  });
  for (const auto& v : visits) REQUIRE(v.load() == 1);
  return owner;
}

TEST_CASE("parallel_for covers every index once, in chunks fixed by n and the chunk count") {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    CHECK(pool.num_threads() == threads);
    for (int64_t n : {1, 7, 100, 2048}) {
      for (int chunks : {1, 3, 16, 5000}) {
        const std::vector<int> owner = chunk_of_each(pool, n, chunks);
        const int64_t k = std::min<int64_t>(chunks, n);
        for (int64_t i = 0; i < n; ++i) {
          const int c = owner[static_cast<size_t>(i)];
          CHECK(n * c / k <= i);
          CHECK(i < n * (c + 1) / k);
        }
      }
    }
    pool.parallel_for(0, 4, [](int, int64_t, int64_t) { FAIL("no work for n = 0"); });
  }
}

TEST_CASE("an exception in a chunk reaches the caller: the lowest-numbered chunk's") {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    std::atomic<int> ran{0};
    try {
      pool.parallel_for(64, 16, [&](int chunk, int64_t, int64_t) {
        ++ran;
        if (chunk == 5 || chunk == 9) throw std::runtime_error("chunk " + std::to_string(chunk));
      });
      FAIL("no exception");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "chunk 5");
    }
    CHECK(ran.load() >= 6);  // every chunk up to the first that threw ran
    // The pool still works afterwards.
    std::atomic<int64_t> sum{0};
    pool.parallel_for(1000, 7, [&](int, int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
    CHECK(sum.load() == 999 * 1000 / 2);
  }
  // Exceptions of any type pass through unchanged.
  ThreadPool pool(3);
  CHECK_THROWS_AS(pool.parallel_for(10, 10,
                                    [](int chunk, int64_t, int64_t) {
                                      if (chunk == 0) throw 42;
                                    }),
                  int);
}

TEST_CASE("callers on several threads share one pool, and bodies may nest") {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::vector<int64_t> sums(6, 0);
  for (int k = 0; k < 6; ++k) {
    callers.emplace_back([&pool, &sums, k] {
      for (int rep = 0; rep < 20; ++rep) {
        std::atomic<int64_t> sum{0};
        pool.parallel_for(300, 12, [&](int, int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            if (k % 2 == 0) {  // nested: a body that itself fans out
              pool.parallel_for(4, 4, [&](int, int64_t nb, int64_t ne) { sum += (ne - nb) * i; });
            } else {
              sum += 4 * i;
            }
          }
        });
        sums[static_cast<size_t>(k)] = sum.load();
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int64_t s : sums) CHECK(s == 4 * (299 * 300 / 2));
}

TEST_CASE("shared pools: one per size, kept") {
  ThreadPool& a = ThreadPool::shared(3);
  CHECK(&a == &ThreadPool::shared(3));
  CHECK(a.num_threads() == 3);
  CHECK(ThreadPool::shared(0).num_threads() == 1);
  CHECK(&ThreadPool::shared(2) != &a);
  CHECK(available_cpus() >= 1);
}

}  // namespace
}  // namespace dcp
