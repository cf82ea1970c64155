// The litmus report: the stress calibration, the table of weak-outcome rates
// per test with and without the best stress, the conclusions, and JSON.
// Pure C++ (tested on the host with made-up tallies).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "litmus_plan.h"

namespace dcp {

struct LitmusRow {
  LitmusTest test;
  LitmusStress stress;
  LitmusTally tally;
  double seconds = 0;
};

struct LitmusReport {
  std::string device;  // "NVIDIA H100 80GB HBM3, 132 SMs"
  std::string mps;     // MpsController::description()
  uint64_t seed = 0;
  uint64_t iterations = 0;         // per setting
  std::vector<LitmusRow> calibration;  // calibration_test() under each stress
  LitmusStress best;               // the calibration row with the highest rate (or none)
  std::vector<LitmusRow> rows;     // every litmus_tests() entry, without and with `best`
};

// The calibration row with the most weak outcomes per million (none when no
// stress setting beat no stress).
LitmusStress best_stress(const std::vector<LitmusRow>& calibration);

// Conclusions, one line each: for each placement, whether relaxed message
// passing showed weak outcomes (with the rate), and every ordered test
// (fenced, release-acquire) that showed any: those contradict the PTX memory
// model and mean a harness bug (`contradiction` set).
std::vector<std::string> litmus_conclusions(const LitmusReport& r, bool* contradiction);

std::string render_litmus(const LitmusReport& r);
nlohmann::json litmus_json(const LitmusReport& r);

}  // namespace dcp
