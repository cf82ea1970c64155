// The axis table's own contracts: every axis can write, read and serialize
// itself; the use orders name real axes; the JSON of a case reads back.
#include "axes.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "geometry.h"
#include "random_case.h"
#include "shrink.h"
#include "suites.h"

namespace dcp {
namespace {

TEST_CASE("every axis has a name, id token, reader and JSON; names are unique") {
  std::set<std::string_view> names;
  for (const AxisDesc& a : case_axes_table()) {
    CAPTURE(a.name);
    CHECK(names.insert(a.name).second);
    CHECK(a.token);
    CHECK(a.read);
    CHECK(a.to_json);
    CHECK(a.from_json);
    CHECK(bool(a.shrink) == bool(a.measure));
    if (a.full_pick) CHECK(a.suite_values);
  }
}

TEST_CASE("each use lists every axis that takes part in it, once") {
  auto count = [](auto&& has) {
    size_t n = 0;
    for (const AxisDesc& a : case_axes_table()) n += has(a) ? 1 : 0;
    return n;
  };
  for (AxisUse use : {AxisUse::kSuite, AxisUse::kDraw, AxisUse::kShrink}) {
    const auto axes = axes_for(use);
    const std::set<const AxisDesc*> unique(axes.begin(), axes.end());
    CHECK(unique.size() == axes.size());
    CHECK(axes.size() == count([use](const AxisDesc& a) {
            return use == AxisUse::kSuite  ? bool(a.suite_values)
                   : use == AxisUse::kDraw ? bool(a.draw)
                                           : bool(a.shrink);
          }));
  }
}

TEST_CASE("a case's JSON reads back as the same case") {
  std::vector<Case> cases = build_suite("default", {4, *find_geometry("kimi-k3"), 9});
  for (uint64_t i = 0; i < 300; ++i) {
    cases.push_back(random_case(4, i, 8, custom_geometry(3, 128, 40, 16)));
  }
  for (const Case& c : cases) {
    const nlohmann::json j = case_json(c);
    CHECK(j["id"] == format_case_id(c));
    CHECK(case_from_json(nlohmann::json::parse(j.dump())) == c);
  }
  nlohmann::json bad = case_json(cases.front());
  bad["mode"] = "replay";
  CHECK_THROWS(case_from_json(bad));
}

TEST_CASE("axis labels: one per grouped axis, in table order") {
  Case c;
  c.geometry = *find_geometry("tiny");
  c.out_pad_elems = 8;
  const auto labels = axis_labels(c);
  size_t k = 0;
  for (const AxisDesc& a : case_axes_table()) {
    if (!a.label) continue;
    REQUIRE(k < labels.size());
    CHECK(labels[k++].first == a.name);
  }
  CHECK(k == labels.size());
  using Label = std::pair<std::string, std::string>;
  CHECK(std::find(labels.begin(), labels.end(), Label{"stride", "padded-out"}) != labels.end());
  CHECK(std::find(labels.begin(), labels.end(), Label{"epoch", "fresh"}) != labels.end());
  CHECK(std::find(labels.begin(), labels.end(), Label{"geometry", "tiny"}) != labels.end());
}

}  // namespace
}  // namespace dcp
