// Pairwise coverage of a suite on a target: per pair of suite axes (within
// each DCP group size, as the `default` suite covers them), how many value
// pairs its runnable cases hold, how many some runnable case could hold
// (allowed) and how many none can (impossible), with the reasons.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "case.h"
#include "suite_space.h"
#include "suites.h"

namespace dcp {

struct AxisPairCoverage {
  std::string axis_a, axis_b;
  int covered = 0;     // allowed pairs some runnable case of the suite holds
  int allowed = 0;     // pairs some runnable case holds (summed over group sizes)
  int impossible = 0;  // pairs no runnable case holds
};

// An impossible value or pair of one group size, with the reason of a case
// that has it. A pair is listed only when both its values are allowed.
struct ImpossibleItem {
  int dcp_size = 0;
  std::string what;  // "lse=bf16", "mode=graph x slots=2", or "dcp=4" (the whole size)
  std::string reason;
};

struct Coverage {
  std::vector<AxisPairCoverage> pairs;
  int covered = 0, allowed = 0, impossible = 0;
  std::vector<ImpossibleItem> impossible_items;

  // "coverage: 412 of 412 allowed pairs covered (100.0%), 37 impossible here"
  std::string total_line() const;
  double percent() const;  // 100 when nothing is allowed
};

// The coverage of `cases` (a suite built with `opts`) on the target of
// opts.skip_reason (null: every case runs).
Coverage suite_coverage(const std::vector<Case>& cases, const SuiteOptions& opts);

// The per-pair table, the total line, then each impossible item and its reason.
std::string coverage_text(const Coverage& c);
void to_json(nlohmann::json& j, const Coverage& c);
void from_json(const nlohmann::json& j, Coverage& c);

}  // namespace dcp
