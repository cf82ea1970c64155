#include "coverage.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace dcp {

double Coverage::percent() const { return allowed == 0 ? 100.0 : 100.0 * covered / allowed; }

std::string Coverage::total_line() const {
  return fmt::format("coverage: {} of {} allowed pairs covered ({:.1f}%), {} impossible here",
                     covered, allowed, percent(), impossible);
}

Coverage suite_coverage(const std::vector<Case>& cases, const SuiteOptions& opts) {
  const Geometry g = canonical_geometry(opts.geometry);
  const SuiteAxes ax({opts.world, g});
  const size_t dcp = ax.index_of("dcp");
  Coverage cov;
  bool first = true;
  for (int w = 0; w < ax.size(dcp); ++w) {
    const AllowedSpace space(ax, g, w, opts.skip_reason);
    const std::vector<size_t>& others = space.others();
    const std::vector<int> n = space.sizes();
    const int num = static_cast<int>(n.size());
    if (first) {
      for (int i = 0; i < num; ++i) {
        for (int j = i + 1; j < num; ++j) {
          cov.pairs.push_back({std::string(ax.axes[others[i]]->name),
                               std::string(ax.axes[others[j]]->name)});
        }
      }
      first = false;
    }
    Case probe;
    ax.values[dcp][static_cast<size_t>(w)](probe);
    const int size = probe.dcp_size;
    // The rows of the suite's runnable cases of this group size.
    std::vector<std::vector<int>> rows;
    for (const Case& c : cases) {
      if (c.dcp_size != size || (opts.skip_reason && !opts.skip_reason(c).empty())) continue;
      std::vector<int> row;
      for (size_t i : others) row.push_back(ax.value_of(i, c));
      rows.push_back(std::move(row));
    }
    if (!space.group_reason().empty()) {
      cov.impossible_items.push_back({size, fmt::format("dcp={}", size), space.group_reason()});
    } else {
      for (int i = 0; i < num; ++i) {
        for (int a = 0; a < n[i]; ++a) {
          if (space.value_reason(i, a).empty()) continue;
          cov.impossible_items.push_back(
              {size, ax.value_name(others[i], a, g), space.value_reason(i, a)});
        }
      }
    }
    size_t p = 0;
    for (int i = 0; i < num; ++i) {
      for (int j = i + 1; j < num; ++j, ++p) {
        AxisPairCoverage& pc = cov.pairs[p];
        for (int a = 0; a < n[i]; ++a) {
          for (int b = 0; b < n[j]; ++b) {
            bool held = false;
            for (const auto& r : rows) held = held || (r[i] == a && r[j] == b);
            // A pair a runnable case holds is allowed, whatever the search found.
            const bool allowed = held || space.allowed(i, a, j, b);
            pc.covered += held;
            pc.allowed += allowed;
            pc.impossible += !allowed;
            const bool values_ok =
                space.value_reason(i, a).empty() && space.value_reason(j, b).empty();
            if (!allowed && values_ok && space.group_reason().empty()) {
              cov.impossible_items.push_back(
                  {size,
                   fmt::format("{} x {}", ax.value_name(others[i], a, g),
                               ax.value_name(others[j], b, g)),
                   space.pair_reason(i, a, j, b)});
            }
          }
        }
      }
    }
  }
  for (const AxisPairCoverage& pc : cov.pairs) {
    cov.covered += pc.covered, cov.allowed += pc.allowed, cov.impossible += pc.impossible;
  }
  return cov;
}

std::string coverage_text(const Coverage& c) {
  std::string out = fmt::format("{:<20} {:>8} {:>8} {:>11}\n", "axis pair", "covered", "allowed",
                                "impossible");
  for (const AxisPairCoverage& p : c.pairs) {
    out += fmt::format("{:<20} {:>8} {:>8} {:>11}\n", p.axis_a + " x " + p.axis_b, p.covered,
                       p.allowed, p.impossible);
  }
  out += c.total_line() + "\n";
  for (const ImpossibleItem& i : c.impossible_items) {
    out += fmt::format("impossible here: dcp{} {}: {}\n", i.dcp_size, i.what, i.reason);
  }
  return out;
}

void to_json(nlohmann::json& j, const Coverage& c) {
  j = {{"covered", c.covered},
       {"allowed", c.allowed},
       {"impossible", c.impossible},
       {"percent", c.percent()},
       {"pairs", nlohmann::json::array()},
       {"impossible_items", nlohmann::json::array()}};
  for (const AxisPairCoverage& p : c.pairs) {
    j["pairs"].push_back({{"axes", {p.axis_a, p.axis_b}},
                          {"covered", p.covered},
                          {"allowed", p.allowed},
                          {"impossible", p.impossible}});
  }
  for (const ImpossibleItem& i : c.impossible_items) {
    j["impossible_items"].push_back(
        {{"dcp_size", i.dcp_size}, {"what", i.what}, {"reason", i.reason}});
  }
}

void from_json(const nlohmann::json& j, Coverage& c) {
  c = {};
  j.at("covered").get_to(c.covered);
  j.at("allowed").get_to(c.allowed);
  j.at("impossible").get_to(c.impossible);
  for (const auto& p : j.at("pairs")) {
    c.pairs.push_back({p.at("axes").at(0).get<std::string>(), p.at("axes").at(1).get<std::string>(),
                       p.at("covered").get<int>(), p.at("allowed").get<int>(),
                       p.at("impossible").get<int>()});
  }
  for (const auto& i : j.at("impossible_items")) {
    c.impossible_items.push_back({i.at("dcp_size").get<int>(), i.at("what").get<std::string>(),
                                  i.at("reason").get<std::string>()});
  }
}

}  // namespace dcp
