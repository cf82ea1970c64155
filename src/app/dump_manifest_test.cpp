// The dump manifest: the ranks' fragments merged in rank order with what the
// case is, the fragments removed, a rank without one listed as missing.
#include "dump_manifest.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "geometry.h"

namespace dcp {
namespace {

TEST_CASE("manifest: fragments merged, removed, missing ranks named") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dcp-manifest-" + std::to_string(getpid()));
  fs::create_directories(dir);
  {
    std::ofstream(dir / "rank1.json")
        << R"({"rank": 1, "group_rank": 1, "tensors": [{"name": "output"}]})";
  }
  { std::ofstream(dir / "rank0.json") << R"({"rank": 0, "group_rank": 0, "tensors": []})"; }
  SessionConfig config;
  config.world = 4;
  Case c;
  c.geometry = *find_geometry("tiny");
  c.lse_base = LseBase::kE;
  c.num_tokens = 5;
  CaseResult r;
  r.status = CaseStatus::kFail;
  r.failure = FailureKind::kMismatch;
  r.replay = "dcp-check replay w4-x";
  const auto m = write_dump_manifest(dir.string(), config, c, r);
  CHECK(m["ranks"].size() == 2);
  CHECK(m["ranks"][0]["rank"] == 0);
  CHECK(m["ranks"][1]["tensors"][0]["name"] == "output");
  CHECK(m["missing_ranks"] == nlohmann::json({2, 3}));
  CHECK(m["status"] == "fail");
  CHECK(m["failure"] == "mismatch");
  CHECK(m["lse_base"] == "e");
  CHECK(m["num_tokens"] == 5);
  CHECK(m["head_dim"] == c.geometry.head_dim);
  CHECK_FALSE(fs::exists(dir / "rank0.json"));
  CHECK_FALSE(fs::exists(dir / "rank1.json"));
  std::ifstream in(dir / "manifest.json");
  CHECK(nlohmann::json::parse(in)["case_id"] == format_case_id(c));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dcp
