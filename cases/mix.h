// Seed mixing shared by the generator, plans, suites and random cases:
// SplitMix64's finalizer (a bijection on 64 bits with full avalanche), so
// nearby counters give unrelated values. Never `base + rank * 100`.
#pragma once

#include <cstdint>
#include <string_view>

namespace dcp {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Folds one more field into a key; distinct v give distinct results.
constexpr uint64_t hash_in(uint64_t key, uint64_t v) { return mix64(key ^ mix64(v + kGolden)); }

template <typename... Vs>
constexpr uint64_t hash_all(uint64_t key, Vs... vs) {
  ((key = hash_in(key, static_cast<uint64_t>(vs))), ...);
  return key;
}

// The i-th value of the counter stream `key` (SplitMix64 with state key + i).
constexpr uint64_t stream_at(uint64_t key, uint64_t i) { return mix64(key + (i + 1) * kGolden); }

// Uniform in [0, 1) from the top 53 bits.
constexpr double unit_double(uint64_t r) { return static_cast<double>(r >> 11) * 0x1p-53; }

constexpr uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char ch : s) {
    h ^= static_cast<uint8_t>(ch);
    h *= 0x100000001B3ull;
  }
  return h;
}

// A small deterministic stream for drawing structure (plans, suites).
class Rng {
 public:
  explicit Rng(uint64_t key) : key_(key) {}
  uint64_t next() { return stream_at(key_, counter_++); }
  // Uniform in [0, n) (n > 0); the modulo bias is irrelevant at these sizes.
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  int between(int lo, int hi) { return lo + below(hi - lo + 1); }  // inclusive
  bool chance(double p) { return unit_double(next()) < p; }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace dcp
