// Allowed values and pairs by witness search. The skip predicate is a black
// box over whole cases, so a value or pair is allowed exactly when a runnable
// case holding it is found; the search for one:
//   1. an anchor: a runnable row, repaired from the all-first-values row;
//   2. a value: the anchor with that value, repaired with the value fixed;
//   3. a pair: the anchor, or either value's witness, with the pair set in,
//      else that row repaired with both values fixed.
// Repair is reason-guided: the predicate names the first rule a case breaks,
// so a change of one free axis that makes the reason a new one may have fixed
// that rule. Repair is a breadth-first search over single changes of the free
// axes that keeps one row per reason seen (a row whose reason was seen adds
// nothing new), until a row runs; at most kMaxRepairRows rows are expanded.
// This is exact when each rule involves at most two suite axes and a free
// axis can satisfy it alone, which holds for today's rules (docs/DESIGN.md,
// "Suites from the declaration"): unary ones (a dtype, base, slot count or
// group size not declared, graphs without graph-safe, empty shards without
// masks-empty-kv, epochs without set_epoch) and the binary one (two slots in
// flight x non-eager modes, for needs-coresident on a shared GPU). Pressure
// is no suite axis (its family is adapted or skipped, suites.cpp). A case
// the search misses but a suite holds is counted allowed (coverage.cpp).
#include "suite_space.h"

#include <fmt/format.h>

#include <deque>
#include <set>
#include <stdexcept>

namespace dcp {
namespace {
// Distinct reasons are few (a rule and a value each); this bounds a search
// that cannot succeed.
constexpr int kMaxRepairRows = 96;
}  // namespace

SuiteAxes::SuiteAxes(const SuiteContext& s) : axes(axes_for(AxisUse::kSuite)) {
  for (size_t i = 0; i < axes.size(); ++i) {
    values.push_back(axes[i]->suite_values(s));
    (axes[i]->full_pick ? secondary : main).push_back(i);
  }
}

size_t SuiteAxes::index_of(std::string_view name) const {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i]->name == name) return i;
  }
  throw std::logic_error(fmt::format("no suite axis '{}'", name));
}

void SuiteAxes::apply(Case& c, const std::vector<size_t>& which,
                      const std::vector<int>& row) const {
  for (size_t k = 0; k < which.size(); ++k) values[which[k]][static_cast<size_t>(row[k])](c);
}

int SuiteAxes::value_of(size_t i, const Case& c) const {
  for (int v = 0; v < size(i); ++v) {
    Case e = c;
    values[i][static_cast<size_t>(v)](e);
    if (e == c) return v;
  }
  return -1;
}

std::string SuiteAxes::value_name(size_t i, int v, const Geometry& g) const {
  Case c;
  c.geometry = g;
  values[i][static_cast<size_t>(v)](c);
  return fmt::format("{}={}", axes[i]->name, axes[i]->label(c));
}

AllowedSpace::AllowedSpace(const SuiteAxes& ax, const Geometry& g, int dcp_value,
                           const SkipReasonFn& skip)
    : ax_(ax), geometry_(g), dcp_value_(dcp_value), skip_(skip) {
  const size_t dcp = ax.index_of("dcp");
  for (size_t i = 0; i < ax.axes.size(); ++i) {
    if (i != dcp) others_.push_back(i);
  }
  const std::vector<int> n = sizes();
  const int num = static_cast<int>(n.size());
  size_t total = 0;
  pair_base_.assign(n.size(), std::vector<size_t>(n.size(), 0));
  for (int i = 0; i < num; ++i) {
    for (int j = i + 1; j < num; ++j) pair_base_[i][j] = total, total += n[i] * n[j];
  }
  value_reason_.resize(n.size());
  for (int i = 0; i < num; ++i) value_reason_[i].assign(static_cast<size_t>(n[i]), "");
  pair_reason_.assign(total, "");
  pair_witness_.assign(total, {});
  if (!skip_) return;

  const std::vector<int> first(n.size(), 0);
  const auto anchor = repair(first, -1, -1);
  if (!anchor) {
    group_reason_ = reason(first);
    for (auto& v : value_reason_) std::fill(v.begin(), v.end(), group_reason_);
    std::fill(pair_reason_.begin(), pair_reason_.end(), group_reason_);
    return;
  }
  std::vector<std::vector<std::vector<int>>> value_witness(n.size());
  for (int i = 0; i < num; ++i) {
    value_witness[i].resize(static_cast<size_t>(n[i]));
    for (int a = 0; a < n[i]; ++a) {
      std::vector<int> row = *anchor;
      row[i] = a;
      if (auto w = repair(row, i, -1)) {
        value_witness[i][a] = *w;
      } else {
        value_reason_[i][a] = reason(row);
      }
    }
  }
  for (int i = 0; i < num; ++i) {
    for (int j = i + 1; j < num; ++j) {
      for (int a = 0; a < n[i]; ++a) {
        for (int b = 0; b < n[j]; ++b) {
          const size_t k = pair_index(i, a, j, b);
          if (!value_reason_[i][a].empty() || !value_reason_[j][b].empty()) {
            pair_reason_[k] = !value_reason_[i][a].empty() ? value_reason_[i][a]
                                                            : value_reason_[j][b];
            continue;
          }
          std::optional<std::vector<int>> found;
          for (std::vector<int> row : {*anchor, value_witness[i][a], value_witness[j][b]}) {
            row[i] = a, row[j] = b;
            if (runnable(row)) found = row;
            if (found) break;
          }
          std::vector<int> row = *anchor;
          row[i] = a, row[j] = b;
          if (!found) found = repair(row, i, j);
          if (found) {
            pair_witness_[k] = *found;
          } else {
            pair_reason_[k] = reason(row);
          }
        }
      }
    }
  }
}

std::vector<int> AllowedSpace::sizes() const {
  std::vector<int> n;
  for (size_t i : others_) n.push_back(ax_.size(i));
  return n;
}

Case AllowedSpace::make_case(const std::vector<int>& row) const {
  Case c;
  c.geometry = geometry_;
  for (size_t i = 0, k = 0; i < ax_.axes.size(); ++i) {
    const bool dcp = k >= others_.size() || others_[k] != i;
    ax_.values[i][static_cast<size_t>(dcp ? dcp_value_ : row[k++])](c);
  }
  return c;
}

size_t AllowedSpace::pair_index(int i, int a, int j, int b) const {
  if (i > j) std::swap(i, j), std::swap(a, b);
  return pair_base_[i][j] + static_cast<size_t>(a * ax_.size(others_[j]) + b);
}

const std::string& AllowedSpace::pair_reason(int i, int a, int j, int b) const {
  return pair_reason_[pair_index(i, a, j, b)];
}

const std::vector<int>& AllowedSpace::witness(int i, int a, int j, int b) const {
  const std::vector<int>& w = pair_witness_[pair_index(i, a, j, b)];
  if (w.empty()) throw std::logic_error("witness of a pair that is not allowed");
  return w;
}

std::string AllowedSpace::reason(const std::vector<int>& row) const {
  if (!skip_) return "";
  auto it = memo_.find(row);
  if (it == memo_.end()) it = memo_.emplace(row, skip_(make_case(row))).first;
  return it->second;
}

std::optional<std::vector<int>> AllowedSpace::repair(std::vector<int> row, int fixed_i,
                                                     int fixed_j) const {
  const int num = static_cast<int>(row.size());
  if (reason(row).empty()) return row;
  std::set<std::string> seen = {reason(row)};
  std::deque<std::vector<int>> queue = {std::move(row)};
  for (int expanded = 0; !queue.empty() && expanded < kMaxRepairRows; ++expanded) {
    const std::vector<int> cur = std::move(queue.front());
    queue.pop_front();
    for (int k = 0; k < num; ++k) {
      if (k == fixed_i || k == fixed_j) continue;
      for (int v = 0; v < ax_.size(others_[k]); ++v) {
        if (v == cur[k]) continue;
        std::vector<int> cand = cur;
        cand[k] = v;
        const std::string r = reason(cand);
        if (r.empty()) return cand;
        if (seen.insert(r).second) queue.push_back(std::move(cand));
      }
    }
  }
  return std::nullopt;
}

}  // namespace dcp
