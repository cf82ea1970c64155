// replay --dump DIR: the manifest. Each rank wrote its tensors and a
// fragment rank<R>.json (worker/case_dump.h); this merges the fragments into
// DIR/manifest.json with what the case is (id, replay line, geometry,
// dtypes, LSE base, verdict) and removes them. docs/dump_check.py reads it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "results.h"
#include "session_config.h"

namespace dcp {

// The manifest document (also written to dir/manifest.json). Ranks whose
// fragment is missing (a worker that died) are listed under "missing_ranks".
nlohmann::ordered_json write_dump_manifest(const std::string& dir, const SessionConfig& config,
                                           const Case& c, const CaseResult& result);

}  // namespace dcp
