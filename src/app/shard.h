// `--shard K/N` (run, selftest, stress): this process does part K of N of the
// work, K 0-based in [0, N), as Bazel's TEST_SHARD_INDEX and Buildkite's
// BUILDKITE_PARALLEL_JOB count. Without the flag the shard comes from Bazel's
// TEST_SHARD_INDEX/TEST_TOTAL_SHARDS, else Buildkite's
// BUILDKITE_PARALLEL_JOB/BUILDKITE_PARALLEL_JOB_COUNT, else 0/1 (everything).
// run/selftest keep items i with i % N == K (round-robin in suite order: the
// N parts are disjoint and their union is the whole list); stress draws from
// its own seed stream, shard_seed(base, K). docs/ci.md, docs/DESIGN.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace dcp {

inline constexpr int kMaxShards = 100000;

struct Shard {
  int index = 0;       // K
  int count = 1;       // N
  std::string source;  // "--shard", "TEST_SHARD_INDEX/TEST_TOTAL_SHARDS", ... ("" : none)
  bool sharded() const { return count > 1; }
  std::string text() const;  // "K/N"
};

// "K/N" -> Shard; UsageError (one line, naming `what`) unless 0 <= K < N <= kMaxShards.
Shard parse_shard(std::string_view text, std::string_view what = "--shard");

using EnvLookup = std::function<std::optional<std::string>(const char*)>;
std::optional<std::string> process_env(const char* name);
// The flag when given (""), else the scheduler's variables (env), else 0/1.
// A half-set or malformed pair is a UsageError naming the variables.
Shard resolve_shard(const std::string& flag, const EnvLookup& env = process_env);

// "shard 1/3 from TEST_SHARD_INDEX/TEST_TOTAL_SHARDS", "" when not sharded by env.
std::string shard_note(const Shard& s);

// Items i with i % count == index, in order.
template <typename T>
std::vector<T> take_shard(const std::vector<T>& all, const Shard& s) {
  std::vector<T> part;
  for (size_t i = static_cast<size_t>(s.index); i < all.size(); i += static_cast<size_t>(s.count)) {
    part.push_back(all[i]);
  }
  return part;
}

// Stress: shard K's base seed, a SplitMix64 step of (base, K); shard 0 of 1
// keeps `base`, so an unsharded run is unchanged.
uint64_t shard_seed(uint64_t base, const Shard& s);

// Bazel: a test runner that shards touches TEST_SHARD_STATUS_FILE (when set)
// to say it honours the shard variables.
void touch_shard_status_file(const EnvLookup& env = process_env);

void add_shard_option(CLI::App* app, std::string& shard);

}  // namespace dcp
