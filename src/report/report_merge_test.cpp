#include "report_merge.h"

#include <doctest/doctest.h>

#include "errors.h"
#include "exit_code.h"
#include "geometry.h"
#include "report_json.h"

namespace dcp {
namespace {

// Shard k of n of a run whose suite is cases "c0".."c<total-1>"; `failing`
// names the one case that fails ("" none).
ShardReport shard(int k, int n, int total, const std::string& failing = "", int world = 2) {
  RunReport r;
  r.command = "run";
  r.config.world = world;
  r.config.geometry = *find_geometry("tiny");
  r.config.backend = BackendKind::kHost;
  r.suite = "smoke";
  for (int i = k; i < total; i += n) {
    CaseResult c;
    c.case_id = "c" + std::to_string(i);
    c.status = c.case_id == failing ? CaseStatus::kFail : CaseStatus::kPass;
    if (c.status == CaseStatus::kFail) c.failure = FailureKind::kMismatch;
    r.cases.push_back(c);
  }
  if (n > 1) {
    ReportShard s;
    s.index = k;
    s.count = n;
    s.source = "--shard";
    s.suite_cases = total;
    r.shard = s;
  }
  r.exit_code = exit_code(findings_of(r.cases, 0));
  return {"s" + std::to_string(k) + ".json", report_to_json(r)};
}

std::vector<std::string> ids(const MergedReport& m) {
  std::vector<std::string> out;
  for (const CaseResult& c : m.report.cases) out.push_back(c.case_id);
  return out;
}

}  // namespace

TEST_CASE("merge: the shards' cases come back in suite order, with one verdict") {
  const MergedReport m = merge_reports({shard(2, 3, 8, "c5"), shard(0, 3, 8), shard(1, 3, 8)});
  CHECK(ids(m) == std::vector<std::string>{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"});
  CHECK(m.num_shards == 3);
  CHECK(m.report.exit_code == kExitKernelFailure);
  CHECK(m.json["verdict"] == "FAIL");
  CHECK(m.json["counts"]["total"] == 8);
  CHECK(m.json["counts"]["failed"] == 1);
  CHECK_FALSE(m.json.contains("shard"));
  CHECK(m.json["merged"]["num_shards"] == 3);
  const MergedReport one = merge_reports({shard(0, 1, 5)});
  CHECK(one.report.exit_code == kExitPass);
  CHECK(ids(one).size() == 5);
}

TEST_CASE("merge: refuses a missing or repeated shard and reports of other runs") {
  CHECK_THROWS_WITH_AS(merge_reports({shard(0, 3, 8), shard(1, 3, 8)}),
                       "merge: shard 2/3 is missing (2 of 3 reports given)", UsageError);
  CHECK_THROWS_WITH_AS(merge_reports({shard(0, 2, 8), shard(0, 2, 8)}),
                       "merge: s0.json and s0.json are both shard 0/2", UsageError);
  CHECK_THROWS_AS(merge_reports({shard(0, 2, 8), shard(1, 3, 8)}), UsageError);
  CHECK_THROWS_WITH_AS(merge_reports({shard(0, 2, 8), shard(1, 2, 8, "", 4)}),
                       "merge: s0.json and s1.json are not shards of one run: world 2 vs 4",
                       UsageError);
  // Shards that split different case lists (generated on machines that differ).
  ShardReport other = shard(1, 2, 8);
  other.json["shard"]["suite_sha256"] = "0123";
  CHECK_THROWS_WITH_AS(merge_reports({shard(0, 2, 8), other}),
                       "merge: s0.json and s1.json are not shards of one run: suite's case list "
                       "(sha256)  vs 0123",
                       UsageError);
  CHECK_THROWS_AS(merge_reports({}), UsageError);
  ShardReport junk{"junk.json", {{"a", 1}}};
  CHECK_THROWS_AS(merge_reports({junk}), UsageError);
}

}  // namespace dcp
