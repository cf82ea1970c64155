#include "memory_stress_config.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "errors.h"

namespace dcp {
namespace {

using nlohmann::json;

// `dcp-check litmus` on one H200 under MPS (docs/results/2026-12-06-h200-litmus.md):
// a store then a load on an 8 KiB region raised message passing's weak rate the
// most, between blocks and between processes.
LitmusStress default_stress() {
  LitmusStress s;
  s.pattern = StressPattern::kStoreLoad;
  s.blocks = 1;  // per SM
  s.scratch_words = 2048;
  s.stride_words = 32;
  return s;
}

std::string setting_text(const LitmusStress& s) {
  return fmt::format("{} on {} KiB, {} block{} of {} threads per SM",
                     s.pattern == StressPattern::kStoreStore  ? "st-st"
                     : s.pattern == StressPattern::kStoreLoad ? "st-ld"
                     : s.pattern == StressPattern::kLoadStore ? "ld-st"
                                                              : "ld-ld",
                     uint64_t{s.scratch_words} * 4 / 1024, s.blocks, s.blocks == 1 ? "" : "s",
                     kLitmusThreads);
}

const char* env_or_null(const char* name) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

json read_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json::object();
  return json::parse(in);  // throws on malformed text
}

}  // namespace

std::string memory_stress_cache_path() {
  std::string dir;
  if (const char* d = env_or_null("DCP_CHECK_CACHE_DIR")) {
    dir = d;
  } else if (const char* x = env_or_null("XDG_CACHE_HOME")) {
    dir = std::string(x) + "/dcp-check";
  } else if (const char* h = env_or_null("HOME")) {
    dir = std::string(h) + "/.cache/dcp-check";
  } else {
    dir = "/tmp/dcp-check-cache";
  }
  return dir + "/memory-stress.json";
}

MemoryStressConfig memory_stress_for(const std::string& gpu_name, const std::string& cache_path) {
  MemoryStressConfig c{default_stress(), ""};
  const std::string fallback =
      fmt::format("{} (default: no calibration for '{}' in {}; `dcp-check litmus` makes one)",
                  setting_text(c.stress), gpu_name, cache_path);
  try {
    const json cache = read_cache(cache_path);
    if (!cache.contains(gpu_name)) {
      c.description = fallback;
      return c;
    }
    const json& e = cache.at(gpu_name);
    LitmusStress s;
    s.pattern = static_cast<StressPattern>(e.at("pattern").get<int>());
    s.blocks = e.at("blocks_per_sm").get<int>();
    s.scratch_words = e.at("scratch_words").get<uint32_t>();
    s.stride_words = e.at("stride_words").get<uint32_t>();
    const bool valid = s.pattern >= StressPattern::kStoreStore &&
                       s.pattern <= StressPattern::kLoadLoad && s.blocks >= 1 && s.blocks <= 8 &&
                       s.scratch_words >= 64 && (s.scratch_words & (s.scratch_words - 1)) == 0;
    if (!valid) throw std::invalid_argument("values out of range");
    c.stress = s;
    c.description = fmt::format("{} (calibrated by dcp-check litmus: {:.1f} weak per million)",
                                setting_text(s), e.value("weak_per_million", 0.0));
  } catch (const std::exception& e) {
    c.stress = default_stress();
    c.description = fmt::format("{} (default: {} is unreadable: {})", setting_text(c.stress),
                                cache_path, e.what());
  }
  return c;
}

void save_memory_stress(const std::string& cache_path, const std::string& gpu_name,
                        const LitmusStress& best, int blocks_per_sm, double weak_per_million) {
  json cache = json::object();
  try {
    cache = read_cache(cache_path);
  } catch (const std::exception&) {
    cache = json::object();  // a malformed cache is replaced
  }
  cache[gpu_name] = {{"pattern", static_cast<int>(best.pattern)},
                     {"blocks_per_sm", blocks_per_sm},
                     {"scratch_words", best.scratch_words},
                     {"stride_words", best.stride_words},
                     {"weak_per_million", weak_per_million}};
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(cache_path).parent_path(), ec);
  const std::string tmp = cache_path + ".tmp";
  {
    std::ofstream out(tmp);
    out << cache.dump(2) << "\n";
    if (!out) DCP_THROW(HarnessError, "cannot write {}: {}", tmp, std::strerror(errno));
  }
  std::filesystem::rename(tmp, cache_path, ec);
  if (ec) DCP_THROW(HarnessError, "cannot write {}: {}", cache_path, ec.message());
}

}  // namespace dcp
