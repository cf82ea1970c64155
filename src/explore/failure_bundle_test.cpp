// Failure bundles: every Case field is recorded, 64-bit seeds survive JSON,
// mismatches are capped, and a bad directory is a usage error up front.
#include "failure_bundle.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "errors.h"
#include "geometry.h"

namespace dcp {
namespace {

FailureBundle sample_bundle() {
  FailureBundle b;
  b.scenario.dcp_size = 4;
  b.scenario.geometry = custom_geometry(2, 64, 32);
  b.scenario.num_tokens = 7;
  b.scenario.mode = ExecMode::kPipelined;
  b.scenario.num_calls = 3;
  b.scenario.epoch_start = 0xFFFFFFFEu;
  b.scenario.seed = 0xFEDCBA9876543210ull;  // above 2^53: a JSON number would round it
  b.result.status = CaseStatus::kFail;
  b.result.message = "3 of 896 elements wrong";
  for (int rank = 0; rank < 4; ++rank) {
    RankCaseResult r;
    r.rank = rank;
    r.num_mismatches = 8;
    r.first_mismatches.resize(8);
    for (Mismatch& m : r.first_mismatches) m.rank = rank;
    b.result.ranks.push_back(r);
  }
  b.world = 4;
  b.backend = "host";
  b.impl = "direct";
  b.replay = "dcp-check replay w4-... --backend host";
  b.stress_seed = 0x8000000000000001ull;
  b.stress_index = 17;
  return b;
}

}  // namespace

TEST_CASE("failure bundle JSON records the scenario, seeds and capped mismatches") {
  const FailureBundle b = sample_bundle();
  const nlohmann::json j = failure_bundle_json(b);
  CHECK(j["case_id"] == format_case_id(b.scenario));
  CHECK(j["scenario"]["id"] == format_case_id(b.scenario));
  CHECK(j["scenario"]["mode"] == std::string(to_string(ExecMode::kPipelined)));
  CHECK(j["scenario"]["num_calls"] == 3);
  CHECK(j["scenario"]["epoch_start"] == 0xFFFFFFFEu);
  CHECK(j["scenario"]["geometry"]["head_dim"] == 64);
  CHECK(j["seed"] == "0xfedcba9876543210");
  CHECK(j["stress_seed"] == "0x8000000000000001");
  CHECK(j["stress_index"] == 17);
  CHECK(j["world"] == 4);
  CHECK(j["status"] == "fail");
  CHECK(j["replay"] == b.replay);
  CHECK(j["ranks"].size() == 4);
  CHECK(j["first_mismatches"].size() == 16);  // 32 offered, capped
  CHECK(j["first_mismatches"][15]["rank"] == 1);
  CHECK_FALSE(j.contains("shrunk"));
  CHECK(j["environment"].contains("git_revision"));  // even without a session
  // Every field of the Case struct is present (a new field must be added here).
  for (const char* key :
       {"dcp_size", "geometry", "out_dtype", "lse_dtype", "lse_base", "num_tokens", "out_pad_elems",
        "lse_pad_elems", "empty", "special", "num_slots", "mode", "num_calls", "num_layers", "skew",
        "epoch_start", "seed"}) {
    CAPTURE(key);
    CHECK(j["scenario"].contains(key));
  }
}

TEST_CASE("failure bundles are written as <case id>.json; bad directories are usage errors") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("dcp-bundle-test-{}", ::getpid());
  fs::remove_all(dir);
  const fs::path nested = dir / "a" / "b";
  prepare_failure_dir(nested.string());  // created with parents
  CHECK(fs::is_directory(nested));
  CHECK(fs::is_empty(nested));  // the probe file is gone

  FailureBundle b = sample_bundle();
  b.shrunk = ShrunkCase{b.scenario, "dcp-check replay w4-min", 5, 12, true};
  const std::string path = write_failure_bundle(nested.string(), b);
  CHECK(path == (nested / (format_case_id(b.scenario) + ".json")).string());
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  CHECK(j["shrunk"]["num_steps"] == 5);
  CHECK(j["shrunk"]["replay"] == "dcp-check replay w4-min");

  const fs::path file = dir / "plain-file";
  std::ofstream(file) << "x";
  CHECK_THROWS_AS(prepare_failure_dir(file.string()), UsageError);
  CHECK_THROWS_AS(prepare_failure_dir((file / "sub").string()), UsageError);
  CHECK_THROWS_AS(prepare_failure_dir(""), UsageError);
  CHECK_THROWS_AS(prepare_failure_dir("/proc/dcp-no-such/dir"), UsageError);
  fs::remove_all(dir);
}

}  // namespace dcp
