// The output hash (case_runner.h's fnv1a, now word-wise): deterministic,
// sensitive to every bit, to the length and to the starting value; and the
// per-call digest built from it in blocks.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "case_runner.h"
#include "thread_pool.h"

namespace dcp {
namespace {

std::vector<uint8_t> bytes_of(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

TEST_CASE("output hash: every bit, the length and the start value matter") {
  for (size_t n : {0, 1, 7, 8, 9, 31, 32, 33, 100, 1000}) {
    const std::vector<uint8_t> v = bytes_of(n, static_cast<uint8_t>(n));
    const uint64_t h = fnv1a(kFnvOffset, v);
    CHECK(h == fnv1a(kFnvOffset, v));  // deterministic
    CHECK(h != fnv1a(kFnvOffset ^ 1, v));
    std::set<uint64_t> seen{h};
    for (size_t i = 0; i < n; ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::vector<uint8_t> w = v;
        w[i] ^= static_cast<uint8_t>(1u << bit);
        seen.insert(fnv1a(kFnvOffset, w));
      }
    }
    CHECK(seen.size() == 1 + 8 * n);  // no flip collides with another or the original
    // Trailing zeros are not padding: every length hashes differently.
    std::vector<uint8_t> longer = v;
    longer.push_back(0);
    CHECK(fnv1a(kFnvOffset, longer) != h);
  }
  // All-zero buffers of different lengths differ too; so do swapped words.
  std::set<uint64_t> zeros;
  for (size_t n = 0; n <= 80; ++n) zeros.insert(fnv1a(kFnvOffset, std::vector<uint8_t>(n, 0)));
  CHECK(zeros.size() == 81u);
  std::vector<uint8_t> a = bytes_of(64, 9), b = a;
  std::swap_ranges(b.begin(), b.begin() + 8, b.begin() + 8);
  CHECK(fnv1a(kFnvOffset, a) != fnv1a(kFnvOffset, b));
  // Chaining (worker.cpp folds per-pass hashes this way) depends on order.
  const uint64_t x = fnv1a(kFnvOffset, bytes_of(16, 1)), y = fnv1a(kFnvOffset, bytes_of(16, 2));
  CHECK(fnv1a(fnv1a(kFnvOffset, bytes_of(16, 1)), bytes_of(16, 2)) !=
        fnv1a(fnv1a(kFnvOffset, bytes_of(16, 2)), bytes_of(16, 1)));
  CHECK(x != y);
}

TEST_CASE("output digest: the bytes alone decide it, not the pool's threads; every block counts") {
  ThreadPool four(4), one(1);
  for (size_t n : {size_t{0}, size_t{5}, size_t{64} << 10, (size_t{64} << 10) + 1, size_t{2} << 20}) {
    std::vector<uint8_t> v = bytes_of(n, 3);
    const uint64_t d = output_digest(v);
    CHECK(output_digest(v, &four) == d);
    CHECK(output_digest(v, &one) == d);
    if (n == 0) continue;
    for (size_t at : {size_t{0}, n / 2, n - 1}) {  // first, middle and last block
      std::vector<uint8_t> w = v;
      w[at] ^= 0x10;
      CHECK(output_digest(w, &four) != d);
    }
    v.push_back(0);
    CHECK(output_digest(v, &four) != d);  // the length counts
  }
  // The case hash folds digests in op order.
  const uint64_t a = output_digest(bytes_of(100, 1)), b = output_digest(bytes_of(100, 2));
  CHECK(fold_output_digest(fold_output_digest(kFnvOffset, a), b) !=
        fold_output_digest(fold_output_digest(kFnvOffset, b), a));
}

TEST_CASE("a call's digest: its output's alone without a combined LSE; the LSE and the split count") {
  const std::vector<uint8_t> bytes = bytes_of(1000, 4);
  CHECK(call_output_digest(CallOutput(bytes, 1000)) == output_digest(bytes));
  const uint64_t split = call_output_digest(CallOutput(bytes, 600));
  CHECK(split != output_digest(bytes));
  CHECK(split != call_output_digest(CallOutput(bytes, 604)));  // where the LSE starts counts
  std::vector<uint8_t> other = bytes;
  other[999] ^= 1;  // the LSE's last byte
  CHECK(call_output_digest(CallOutput(other, 600)) != split);
}

}  // namespace
}  // namespace dcp
