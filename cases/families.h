// Case families: the field failures that kernels of this kind really had,
// each a predicate over cases (a family is made of axis values, never a flag
// of its own), so suites, stress, replay and shrink treat its cases like any
// other. `dcp-check list --families` prints them with their counts.
#pragma once

#include <string_view>
#include <vector>

#include "case.h"

namespace dcp {

struct CaseFamily {
  std::string_view name;
  std::string_view what;     // what the cases do, one line
  std::string_view catches;  // the bug they exist for, one line
  bool (*member)(const Case&);
};

const std::vector<CaseFamily>& case_families();

}  // namespace dcp
