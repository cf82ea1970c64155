// `dcp-check merge A.json B.json ...`: the --json reports of the shards of one
// run (or one stress campaign) as one report: one case list (run: back in
// suite order), one verdict and exit code, from which one JSON and one JUnit
// are written. Reports that do not belong together (another command, suite,
// filter, seed, world, geometry, backend, kernel or dcp-check version), a
// shard given twice or missing, are refused with one line (UsageError).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_report.h"

namespace dcp {

struct ShardReport {
  std::string path;  // for messages
  nlohmann::ordered_json json;
};

struct MergedReport {
  RunReport report;              // for the terminal summary and JUnit (exit_code set)
  nlohmann::ordered_json json;   // the merged --json document
  int num_shards = 1;
  bool selftest = false;         // selftest reports: `json` and `verdict` only (no JUnit)
  std::string verdict;           // selftest: the verdict line's detail
};

// Run and stress reports, or selftest reports (mutants merged, exit code the
// worst shard's).
MergedReport merge_reports(const std::vector<ShardReport>& shards);

// One case of a --json report back as a result (report_json.h's case_to_json).
CaseResult case_from_report_json(const nlohmann::ordered_json& j);

}  // namespace dcp
