// Per-rank phase totals over a command's cases (phase_times.h), for the JSON
// report ("phases") and the --verbose summary line, so a run shows what
// bounds it.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "results.h"

namespace dcp {

class PhaseTotals {
 public:
  void add(const CaseResult& r);  // every rank of the case
  bool empty() const { return by_rank_.empty(); }
  // The phase with the largest mean among those on the calling thread's path
  // (check_ms runs beside them and is left out; check_wait_ms is in).
  std::string bound_by() const;
  // {"per_rank": [{"rank": 0, "cases": N, "generate_ms": ...}, ...], "bound_by": "wait"}
  nlohmann::ordered_json to_json() const;
  // "phases (s, mean of 4 ranks): generate 0.12, stage ..., check 1.10 (waited 0.20), ...; bound by wait"
  std::string line() const;
  // Which checker judged the calls, over every rank: "check: 1234 rank-calls
  // on the device checker (float64); the CPU checker's audit re-checked 20 of
  // them, 0 disagreements"; "" when no call was checked.
  std::string check_line() const;

 private:
  PhaseTimes mean() const;
  std::map<int, PhaseTimes> by_rank_;
  std::map<int, int64_t> cases_;
  CheckTally check_;
};

}  // namespace dcp
