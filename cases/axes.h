// The case axes: one table entry per axis, and everything that knows an
// axis's values reads it from here: the case id (format and parse), the
// suites' value lists, random scenarios, shrink candidates, the JSON of a case
// and the terminal's failure grouping. Adding an axis means adding a Case
// field and an entry below (axes.cpp), then using it in the generator and the
// kernel call.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "case.h"
#include "mix.h"

namespace dcp {

// Cursor over the '-'-separated tokens of an id.
class IdTokens {
 public:
  explicit IdTokens(std::string_view id);
  bool done() const { return pos_ >= toks_.size(); }
  std::string_view peek() const { return done() ? std::string_view() : toks_[pos_]; }
  void next(size_t n = 1) { pos_ += n; }
  // True when the next tokens spell `name` (which may contain '-').
  bool matches(std::string_view name) const;

 private:
  std::vector<std::string_view> toks_;
  size_t pos_ = 0;
};

struct SuiteContext {
  int world = 2;
  Geometry geometry;  // already canonical (see canonical_geometry)
};

struct RandomContext {
  std::vector<int> dcp_sizes;  // of the world, largest first
};

using CaseEdit = std::function<void(Case&)>;

struct AxisDesc {
  // The axis's name: its label in the terminal's failure grouping and its
  // name in the orders of axes_in().
  std::string_view name = {};
  // Id: this axis's token(s), "" for none (an optional token at its default).
  // Tokens of all axes are joined with '-' in table order.
  std::function<std::string(const Case&)> token = {};
  // Consumes what `token` wrote into `c`; "" or one error line naming the token.
  std::function<std::string(IdTokens&, Case&)> read = {};
  // Suites: the axis's values as edits of a case whose geometry and earlier
  // suite axes are set. Empty: suites leave the axis at its default.
  std::function<std::vector<CaseEdit>(const SuiteContext&)> suite_values = {};
  // `full` suite: null for a main axis (part of the product), else which of
  // suite_values the row-th case takes (secondary axes cycle).
  std::function<size_t(size_t row)> full_pick = {};
  // Random scenarios: draws this axis into `c` (whose geometry is set).
  std::function<void(Rng&, Case&, const RandomContext&)> draw = {};
  // Shrinking: simpler variants of `c` along this axis, most promising first,
  // and this axis's part of shrink_measure() (non-negative; each candidate
  // must lower the total).
  std::function<void(const Case&, std::vector<Case>&)> shrink = {};
  std::function<int64_t(const Case&)> measure = {};
  // JSON of a case: writes this axis's fields / reads them back (throws
  // nlohmann::json::exception or std::invalid_argument on a bad value).
  std::function<void(const Case&, nlohmann::json&)> to_json = {};
  std::function<void(const nlohmann::json&, Case&)> from_json = {};
  // Failure grouping: the value shown as "<name>=<value>"; null: not grouped.
  std::function<std::string(const Case&)> label = {};
};

// Every axis, in id order.
const std::vector<AxisDesc>& case_axes_table();

// The axes that take part in a use (suite_values, draw or shrink set), in that
// use's order: the names listed for it in axes.cpp first, then the others in
// table order. The lists keep existing suites, random cases and shrink
// candidates as they were; a new axis goes last in each.
enum class AxisUse { kSuite, kDraw, kShrink };
std::vector<const AxisDesc*> axes_for(AxisUse use);

// Every (axis, value) label of a case, in table order.
std::vector<std::pair<std::string, std::string>> axis_labels(const Case& c);

// A case as JSON: "id" and each axis's fields (enums by their id names,
// 64-bit values as hex strings); case_from_json reads it back.
nlohmann::json case_json(const Case& c);
Case case_from_json(const nlohmann::json& j);
nlohmann::json geometry_json(const Geometry& g);
Geometry geometry_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception

// Suite helpers shared with the hand-written suites (smoke, upstream).
enum class Stride { kContig, kPadOut, kPadLse, kPadBoth };
void set_stride(Case& c, Stride s);  // needs c.geometry and c.dcp_size
Geometry canonical_geometry(const Geometry& g);  // an overridden preset becomes custom

}  // namespace dcp
