// Failure bundles (`--save-failures DIR`): one self-contained JSON file per
// failure, enough for someone else to rerun it and to see where it ran: the
// scenario (id and every field), seeds, world, backend, the replay line, the
// first mismatches, the shrunk case if any, and the environment.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "case.h"
#include "results.h"
#include "session_config.h"

namespace dcp {

struct ShrunkCase {
  Case minimal;
  std::string replay;  // the minimal case's replay line
  int num_steps = 0;
  int num_attempts = 0;
  bool reached_fixpoint = false;
};

struct FailureBundle {
  Case scenario;
  CaseResult result;
  int world = 0;
  std::string backend;                   // "gpu" or "host"
  std::string impl;                      // the kernel(s) under test, as the terminal names them
  std::string replay;                    // the failure's replay line
  std::optional<uint64_t> stress_seed;   // stress only: the run's --seed
  std::optional<uint64_t> stress_index;  // stress only: the scenario's index
  std::optional<ShrunkCase> shrunk;
  const EnvironmentInfo* environment = nullptr;  // null: not recorded
};

// The bundle's JSON. "scenario" holds the case id and every field of the Case
// under its struct name (enums as the short names used in ids); 64-bit seeds
// are hex strings, because JSON readers often hold numbers as doubles.
nlohmann::json failure_bundle_json(const FailureBundle& bundle);

// Creates `dir` (and parents) if needed and proves it writable by creating and
// removing a probe file. Throws UsageError naming the directory otherwise, so a
// bad --save-failures is reported before hours of stress, not after.
void prepare_failure_dir(const std::string& dir);

// Writes `<dir>/<case id>.json` (atomically: a temp file renamed into place)
// and returns its path. Throws HarnessError when the write fails.
std::string write_failure_bundle(const std::string& dir, const FailureBundle& bundle);

}  // namespace dcp
