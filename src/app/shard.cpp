#include "shard.h"

#include <charconv>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "errors.h"

namespace dcp {
namespace {

struct EnvPair {
  const char* index;
  const char* count;
};
// Checked in this order; the first pair with either variable set decides.
constexpr EnvPair kSchedulers[] = {{"TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS"},
                                   {"BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT"}};

bool parse_int(std::string_view text, int& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return !text.empty() && ec == std::errc() && ptr == end;
}

}  // namespace

std::string Shard::text() const { return fmt::format("{}/{}", index, count); }

Shard parse_shard(std::string_view text, std::string_view what) {
  const size_t slash = text.find('/');
  Shard s;
  if (slash == std::string_view::npos || !parse_int(text.substr(0, slash), s.index) ||
      !parse_int(text.substr(slash + 1), s.count) || s.count < 1 || s.count > kMaxShards ||
      s.index < 0 || s.index >= s.count) {
    throw UsageError(fmt::format("{} '{}': must be K/N with 0 <= K < N <= {} (K counts from 0)",
                                 what, text, kMaxShards));
  }
  return s;
}

std::optional<std::string> process_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

Shard resolve_shard(const std::string& flag, const EnvLookup& env) {
  if (!flag.empty()) {
    Shard s = parse_shard(flag);
    s.source = "--shard";
    return s;
  }
  for (const EnvPair& p : kSchedulers) {
    const std::optional<std::string> index = env(p.index);
    const std::optional<std::string> count = env(p.count);
    if (!index && !count) continue;
    const std::string names = fmt::format("{}/{}", p.index, p.count);
    if (!index || !count) {
      throw UsageError(fmt::format("{} is set but {} is not: set both, or pass --shard K/N",
                                   index ? p.index : p.count, index ? p.count : p.index));
    }
    Shard s = parse_shard(*index + "/" + *count, names);
    s.source = names;
    return s;
  }
  return Shard{};
}

std::string shard_note(const Shard& s) {
  if (s.source.empty() || s.source == "--shard") return "";
  return fmt::format("shard {} from {}", s.text(), s.source);
}

uint64_t shard_seed(uint64_t base, const Shard& s) {
  if (!s.sharded()) return base;
  // SplitMix64 (Steele, Lea, Flood 2014) over base + (K+1) * golden gamma.
  uint64_t z = base + (static_cast<uint64_t>(s.index) + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void touch_shard_status_file(const EnvLookup& env) {
  const std::optional<std::string> path = env("TEST_SHARD_STATUS_FILE");
  if (!path || path->empty()) return;
  std::ofstream touch(*path, std::ios::app);
  if (!touch) {
    throw UsageError(fmt::format("TEST_SHARD_STATUS_FILE={}: cannot be written", *path));
  }
}

void add_shard_option(CLI::App* app, std::string& shard) {
  app->add_option("--shard", shard,
                  "Do part K of N (K from 0): K/N; default from TEST_SHARD_INDEX/TEST_TOTAL_SHARDS "
                  "or BUILDKITE_PARALLEL_JOB/BUILDKITE_PARALLEL_JOB_COUNT (docs/ci.md)");
}

}  // namespace dcp
