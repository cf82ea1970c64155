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

}  // namespace dcp
