// The suite axes' product as a target can run it: which values and which
// pairs of values (within one DCP group size) some runnable case holds, each
// impossible one with the reason of a case that has it. The `default` suite's
// covering array is built over the allowed pairs (suites.cpp, covering_array.h)
// and `list --coverage` counts them (coverage.h).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "axes.h"
#include "case.h"
#include "suites.h"

namespace dcp {

// The suite axes (axes_for(AxisUse::kSuite)) with their values for one
// build. Main axes (no full_pick) form the product in `full`; secondary ones
// cycle there; all of them join the covering array of `default`.
struct SuiteAxes {
  std::vector<const AxisDesc*> axes;
  std::vector<std::vector<CaseEdit>> values;  // per axis
  std::vector<size_t> main, secondary;        // indices into axes

  explicit SuiteAxes(const SuiteContext& s);
  size_t index_of(std::string_view name) const;  // throws std::logic_error
  int size(size_t i) const { return static_cast<int>(values[i].size()); }
  // Applies value row[k] of axis which[k], in order.
  void apply(Case& c, const std::vector<size_t>& which, const std::vector<int>& row) const;
  // The value of axis i that `c` has (applying its edit leaves `c` as it
  // is), or -1 when none (e.g. a family's call count).
  int value_of(size_t i, const Case& c) const;
  // "axis=label" of value v of axis i, shown on a case of geometry g.
  std::string value_name(size_t i, int v, const Geometry& g) const;
};

// One DCP group size of the product: rows hold a value index for every suite
// axis but "dcp" (the axes `others` lists, in order).
class AllowedSpace {
 public:
  // Computes what `skip` allows; null `skip`: everything is allowed.
  AllowedSpace(const SuiteAxes& ax, const Geometry& g, int dcp_value, const SkipReasonFn& skip);

  const std::vector<size_t>& others() const { return others_; }
  std::vector<int> sizes() const;
  Case make_case(const std::vector<int>& row) const;
  // Why no case of this group size can run ("" when some can).
  const std::string& group_reason() const { return group_reason_; }
  // Reasons, "" when allowed; axes are positions in others(), i != j.
  const std::string& value_reason(int i, int a) const { return value_reason_[i][a]; }
  const std::string& pair_reason(int i, int a, int j, int b) const;
  bool allowed(int i, int a, int j, int b) const { return pair_reason(i, a, j, b).empty(); }
  bool runnable(const std::vector<int>& row) const { return reason(row).empty(); }
  // A runnable row holding the allowed pair.
  const std::vector<int>& witness(int i, int a, int j, int b) const;

 private:
  std::string reason(const std::vector<int>& row) const;  // memoized skip(make_case(row))
  std::optional<std::vector<int>> repair(std::vector<int> row, int fixed_i, int fixed_j) const;
  size_t pair_index(int i, int a, int j, int b) const;

  const SuiteAxes& ax_;
  Geometry geometry_;
  int dcp_value_;
  SkipReasonFn skip_;
  std::vector<size_t> others_;
  std::string group_reason_;
  std::vector<std::vector<std::string>> value_reason_;
  std::vector<std::vector<size_t>> pair_base_;  // [i][j]: offset of pair (i, 0, j, 0)
  std::vector<std::string> pair_reason_;
  std::vector<std::vector<int>> pair_witness_;
  mutable std::map<std::vector<int>, std::string> memo_;
};

}  // namespace dcp
