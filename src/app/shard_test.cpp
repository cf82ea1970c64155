#include "shard.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

#include "errors.h"

namespace dcp {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST_CASE("parse_shard accepts K/N with K from 0 and refuses the rest") {
  const Shard s = parse_shard("2/7");
  CHECK(s.index == 2);
  CHECK(s.count == 7);
  CHECK(s.text() == "2/7");
  for (const char* bad : {"", "3", "7/7", "-1/3", "1/0", "a/3", "1/3x", "1/", "/3", "0/100001"}) {
    CHECK_THROWS_AS(parse_shard(bad), UsageError);
  }
}

TEST_CASE("resolve_shard: the flag, then Bazel, then Buildkite, else everything") {
  CHECK(resolve_shard("", env_of({})).count == 1);
  const Shard bazel = resolve_shard("", env_of({{"TEST_SHARD_INDEX", "1"}, {"TEST_TOTAL_SHARDS", "3"},
                                                {"BUILDKITE_PARALLEL_JOB", "0"},
                                                {"BUILDKITE_PARALLEL_JOB_COUNT", "2"}}));
  CHECK(bazel.text() == "1/3");
  CHECK(shard_note(bazel) == "shard 1/3 from TEST_SHARD_INDEX/TEST_TOTAL_SHARDS");
  const Shard bk = resolve_shard(
      "", env_of({{"BUILDKITE_PARALLEL_JOB", "4"}, {"BUILDKITE_PARALLEL_JOB_COUNT", "5"}}));
  CHECK(bk.text() == "4/5");
  const Shard flag = resolve_shard("0/2", env_of({{"TEST_SHARD_INDEX", "1"}, {"TEST_TOTAL_SHARDS", "3"}}));
  CHECK(flag.text() == "0/2");
  CHECK(shard_note(flag).empty());
  CHECK_THROWS_AS(resolve_shard("", env_of({{"TEST_SHARD_INDEX", "1"}})), UsageError);
  CHECK_THROWS_AS(resolve_shard("", env_of({{"TEST_SHARD_INDEX", "3"}, {"TEST_TOTAL_SHARDS", "3"}})),
                  UsageError);
}

TEST_CASE("take_shard: N disjoint parts whose union is the list, in order") {
  std::vector<int> all(23);
  for (int i = 0; i < 23; ++i) all[i] = i;
  for (int n : {1, 3, 7, 30}) {
    std::multiset<int> seen;
    for (int k = 0; k < n; ++k) {
      const std::vector<int> part = take_shard(all, Shard{k, n, ""});
      for (size_t j = 1; j < part.size(); ++j) CHECK(part[j - 1] < part[j]);
      seen.insert(part.begin(), part.end());
    }
    CHECK(seen == std::multiset<int>(all.begin(), all.end()));
  }
}

TEST_CASE("shard_seed: unsharded keeps the base seed; each shard its own stream") {
  CHECK(shard_seed(42, Shard{}) == 42);
  std::set<uint64_t> seeds;
  for (int k = 0; k < 7; ++k) seeds.insert(shard_seed(42, Shard{k, 7, ""}));
  CHECK(seeds.size() == 7);
  CHECK(shard_seed(42, Shard{3, 7, ""}) == shard_seed(42, Shard{3, 7, ""}));
}

}  // namespace dcp
