#include "failure_bundle.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "axes.h"
#include "errors.h"
#include "report_file.h"
#include "report_json.h"
#include "results.h"
#include "version.h"

namespace dcp {
namespace {

namespace fs = std::filesystem;

// Bundles carry at most this many mismatches over all ranks: enough to see the
// pattern (which rank, which head, which source) without megabytes of JSON.
constexpr size_t kMaxBundleMismatches = 16;

std::string hex64(uint64_t v) { return fmt::format("0x{:016x}", v); }

nlohmann::json rank_summary_json(const RankCaseResult& r) {
  return {{"rank", r.rank},
          {"passed", r.passed},
          {"num_checked", r.num_checked},
          {"num_mismatches", r.num_mismatches},
          {"num_nan", r.num_nan},
          {"output_hash", hex64(r.output_hash)},
          {"elapsed_ms", r.elapsed_ms},
          {"error", r.error},
          {"failure", to_string(r.failure)},
          {"error_kind", error_class(r.failure)}};
}

}  // namespace

nlohmann::json failure_bundle_json(const FailureBundle& b) {
  nlohmann::json mismatches = nlohmann::json::array();
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankCaseResult& r : b.result.ranks) {
    ranks.push_back(rank_summary_json(r));
    for (const Mismatch& m : r.first_mismatches) {
      if (mismatches.size() < kMaxBundleMismatches) mismatches.push_back(m);
    }
  }
  nlohmann::json j = {{"format", "dcp-check-failure-bundle/1"},
                      {"case_id", format_case_id(b.scenario)},
                      {"scenario", case_json(b.scenario)},
                      {"seed", hex64(b.scenario.seed)},
                      {"world", b.world},
                      {"backend", b.backend},
                      {"impl", b.impl},
                      {"status", to_string(b.result.status)},
                      {"message", b.result.message},
                      {"replay", b.replay},
                      {"first_mismatches", mismatches},
                      {"ranks", ranks}};
  if (b.stress_seed) j["stress_seed"] = hex64(*b.stress_seed);
  if (b.stress_index) j["stress_index"] = *b.stress_index;
  if (b.shrunk) {
    j["shrunk"] = {{"case_id", format_case_id(b.shrunk->minimal)},
                   {"scenario", case_json(b.shrunk->minimal)},
                   {"replay", b.shrunk->replay},
                   {"num_steps", b.shrunk->num_steps},
                   {"num_attempts", b.shrunk->num_attempts},
                   {"reached_fixpoint", b.shrunk->reached_fixpoint}};
  }
  if (b.environment != nullptr) {
    j["environment"] = environment_to_json(*b.environment);
  } else {
    // Still say which build wrote the bundle, even without a live session.
    j["environment"] = {{"dcp_version", DCP_VERSION}, {"git_revision", DCP_GIT_REVISION}};
  }
  return j;
}

void prepare_failure_dir(const std::string& dir) {
  if (dir.empty()) throw UsageError("--save-failures: the directory name is empty");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw UsageError(
        fmt::format("--save-failures: cannot create directory '{}': {}", dir, ec.message()));
  }
  if (!fs::is_directory(dir, ec)) {
    throw UsageError(fmt::format("--save-failures: '{}' exists but is not a directory", dir));
  }
  const fs::path probe = fs::path(dir) / fmt::format(".dcp-check-probe-{}", ::getpid());
  {
    std::ofstream f(probe);
    if (!f || !(f << "probe\n") || !(f.flush())) {
      throw UsageError(fmt::format("--save-failures: directory '{}' is not writable", dir));
    }
  }
  fs::remove(probe, ec);
}

std::string write_failure_bundle(const std::string& dir, const FailureBundle& bundle) {
  const fs::path path = fs::path(dir) / (format_case_id(bundle.scenario) + ".json");
  write_file_atomically(path.string(), failure_bundle_json(bundle).dump(2) + "\n");
  return path.string();
}

}  // namespace dcp
