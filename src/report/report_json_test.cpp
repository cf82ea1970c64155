#include "report_json.h"

#include <doctest/doctest.h>

#include "exit_code.h"
#include "geometry.h"

namespace dcp {

TEST_CASE("JSON report: stable top-level fields, counts and verdict agree with the cases") {
  RunReport report;
  report.command = "run";
  report.argv = {"dcp-check", "--world", "2", "--filter", "graph|pipe"};
  report.config.world = 2;
  report.config.geometry = *find_geometry("tiny");
  report.config.backend = BackendKind::kHost;
  report.suite = "smoke";
  report.seed = 7;
  CaseResult pass;
  pass.case_id = "a";
  pass.status = CaseStatus::kPass;
  RankCaseResult k;
  k.rank = 0;
  k.output_hash = 0xdeadbeefcafef00dULL;
  pass.ranks.push_back(k);
  CaseResult fail = pass;
  fail.case_id = "b";
  fail.status = CaseStatus::kFail;
  fail.failure = FailureKind::kMismatch;
  report.cases = {pass, fail};
  report.exit_code = exit_code(findings_of(report.cases, 0));

  const auto j = report_to_json(report);
  CHECK(j.begin().key() == "schema_version");  // ordered: humans read it top-down
  CHECK(j["schema_version"] == kJsonSchemaVersion);
  CHECK(j["command"] == "run");
  CHECK(j["command_line"] == "dcp-check --world 2 --filter 'graph|pipe'");
  CHECK(j["configuration"]["backend"] == "host");
  CHECK(j["configuration"]["geometry"]["name"] == "tiny");
  CHECK(j["configuration"]["seed"] == 7);
  CHECK(j["configuration"]["suite"] == "smoke");
  CHECK(j["environment"].is_null());
  CHECK(j["counts"]["total"] == 2);
  CHECK(j["counts"]["passed"] == 1);
  CHECK(j["counts"]["failed"] == 1);
  CHECK(j["verdict"] == "FAIL");
  CHECK(j["exit_code"] == 1);
  CHECK(j["cases"][1]["status"] == "fail");
  CHECK(j["cases"][1]["failure_type"] == "mismatch");
  CHECK(j["cases"][0]["ranks"][0]["output_hash_hex"] == "deadbeefcafef00d");
  CHECK_FALSE(j.contains("repeat"));

  EnvironmentInfo env;
  env.backend = "host";
  env.rank_gpu = {0, 0};
  report.environment = env;
  report.repeat = RepeatSummary{3, 1, false};
  const auto j2 = report_to_json(report);
  CHECK(j2["environment"]["backend"] == "host");
  CHECK(j2["repeat"]["failed_runs"] == 1);
  CHECK(j2["repeat"]["hashes_identical"] == false);
}

}  // namespace dcp
