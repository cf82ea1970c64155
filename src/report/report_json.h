// `--json FILE`: the machine-readable report. Field names are a stable
// contract documented in docs/report-format.md; bump kJsonSchemaVersion on any
// incompatible change.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "run_report.h"

namespace dcp {

inline constexpr int kJsonSchemaVersion = 1;

nlohmann::ordered_json environment_to_json(const EnvironmentInfo& env);
nlohmann::ordered_json config_to_json(const RunReport& report);
nlohmann::ordered_json case_to_json(const CaseResult& r);
nlohmann::ordered_json report_to_json(const RunReport& report);
// Writes atomically (temp file + rename) so a reader never sees half a report.
// Throws HarnessError if the file cannot be written.
void write_json_report(const std::string& path, const RunReport& report);

// Shared by the JSON and JUnit writers.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace dcp
