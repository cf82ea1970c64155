// BufferPool: leases come back when their last holder drops them, from any
// thread, and are reused without growing when they fit.
#include "buffer_pool.h"

#include <doctest/doctest.h>

#include <thread>
#include <vector>

namespace dcp {
namespace {

int g_allocations = 0;

struct HostBuffer {  // PinnedBuffer's interface on plain memory
  void ensure(size_t bytes, int) {
    if (bytes <= bytes_.size()) return;
    ++g_allocations;
    bytes_.assign(bytes, 0);
  }
  size_t bytes() const { return bytes_.size(); }
  void* data() { return bytes_.data(); }
  std::vector<unsigned char> bytes_;
};

TEST_CASE("a lease returns when its last holder drops it and is reused without growing") {
  g_allocations = 0;
  auto pool = BufferPool<HostBuffer>::create(0, 4);
  std::shared_ptr<HostBuffer> a = pool->take(100);
  void* first = a->data();
  std::shared_ptr<void> shared = a;  // a CallOutput's share
  a.reset();
  CHECK(pool->spare() == 0);  // still held
  shared.reset();
  CHECK(pool->spare() == 1);
  std::shared_ptr<HostBuffer> b = pool->take(50);
  CHECK(b->data() == first);  // the same buffer, not grown
  CHECK(g_allocations == 1);
}

TEST_CASE("a take picks the smallest spare that fits, else grows the largest") {
  g_allocations = 0;
  auto pool = BufferPool<HostBuffer>::create(0, 4);
  {
    auto small = pool->take(10), mid = pool->take(100), big = pool->take(1000);
  }
  CHECK(pool->spare() == 3);
  CHECK(pool->take(50)->bytes() == 100);
  CHECK(g_allocations == 3);
  std::shared_ptr<HostBuffer> grown = pool->take(5000);
  CHECK(grown->bytes() == 5000);
  CHECK(g_allocations == 4);
  CHECK(pool->spare() == 2);  // 10 and 100 left
}

TEST_CASE("leases come back from any thread; the pool keeps at most its spares") {
  auto pool = BufferPool<HostBuffer>::create(0, 2);
  std::vector<std::shared_ptr<HostBuffer>> leases;
  for (int i = 0; i < 5; ++i) leases.push_back(pool->take(64));
  std::thread checker([&] { leases.clear(); });
  checker.join();
  CHECK(pool->spare() == 2);
}

TEST_CASE("the pool outlives its owner while a lease is out") {
  auto pool = BufferPool<HostBuffer>::create(0, 2);
  std::shared_ptr<HostBuffer> lease = pool->take(64);
  const std::weak_ptr<BufferPool<HostBuffer>> alive = pool;
  pool.reset();  // the backend is gone
  REQUIRE_FALSE(alive.expired());
  lease.reset();
  CHECK(alive.expired());  // the last lease took the pool with it
}

}  // namespace
}  // namespace dcp
