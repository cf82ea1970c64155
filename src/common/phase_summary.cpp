#include "phase_summary.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace dcp {
namespace {

// The phases on the case runner's own path, in the order a call goes through them.
std::vector<std::pair<const char*, double>> serial_phases(const PhaseTimes& p) {
  return {{"generate", p.generate_ms}, {"stage", p.stage_ms},     {"launch", p.launch_ms},
          {"setup", p.setup_ms},       {"after", p.after_ms},       {"capture", p.capture_ms},
          {"wait", p.wait_ms},         {"collect", p.collect_ms},   {"check-wait", p.check_wait_ms},
          {"barrier", p.barrier_ms},   {"idle", p.idle_ms}};
}

}  // namespace

void PhaseTotals::add(const CaseResult& r) {
  for (const RankCaseResult& rank : r.ranks) {
    by_rank_[rank.rank] += rank.phases;
    check_ += rank.check;
    ++cases_[rank.rank];
  }
}

PhaseTimes PhaseTotals::mean() const {
  PhaseTimes sum;
  for (const auto& [rank, p] : by_rank_) sum += p;
  if (!by_rank_.empty()) sum /= static_cast<double>(by_rank_.size());
  return sum;
}

std::string PhaseTotals::bound_by() const {
  if (empty()) return "";
  std::pair<const char*, double> top{"", -1};
  for (const auto& phase : serial_phases(mean())) {
    if (phase.second > top.second) top = phase;
  }
  return top.first;
}

nlohmann::ordered_json PhaseTotals::to_json() const {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const auto& [rank, p] : by_rank_) {
    nlohmann::ordered_json row = {{"rank", rank}, {"cases", cases_.at(rank)}};
    for (const PhaseField& f : kPhaseFields) row[f.json_name] = p.*f.ms;
    ranks.push_back(std::move(row));
  }
  return {{"per_rank", std::move(ranks)},
          {"bound_by", bound_by()},
          {"check", nlohmann::json(check_)}};
}

std::string PhaseTotals::line() const {
  if (empty()) return "phases: no case reached a rank";
  const PhaseTimes m = mean();
  return fmt::format(
      "phases (s, mean of {} rank{}): generate {:.2f}, stage {:.2f}, launch {:.2f}, setup {:.2f}, "
      "after {:.2f}, capture {:.2f}, "
      "wait {:.2f}, "
      "collect {:.2f}, check {:.2f} (waited for {:.2f}), barrier {:.2f}, idle {:.2f}; worker CPU "
      "{:.2f} (main thread {:.2f}); bound by {}",
      by_rank_.size(), by_rank_.size() == 1 ? "" : "s", m.generate_ms / 1e3, m.stage_ms / 1e3,
      m.launch_ms / 1e3, m.setup_ms / 1e3, m.after_ms / 1e3, m.capture_ms / 1e3, m.wait_ms / 1e3, m.collect_ms / 1e3, m.check_ms / 1e3,
      m.check_wait_ms / 1e3, m.barrier_ms / 1e3, m.idle_ms / 1e3, m.cpu_ms / 1e3,
      m.main_cpu_ms / 1e3, bound_by());
}

std::string PhaseTotals::check_line() const {
  const CheckTally& k = check_;
  if (k.calls() == 0) return "";
  // Calls are counted per rank: one call of a group of W ranks counts W times.
  if (k.device_calls + k.audited_calls == 0) {
    return fmt::format("check: {} rank-calls on the CPU checker (float64)", k.cpu_calls);
  }
  return fmt::format(
      "check: {} rank-calls on the device checker (float64){}; the CPU checker's audit re-checked "
      "{} of them, {} disagreement{}",
      k.device_calls + k.audited_calls,
      k.cpu_calls > 0 ? fmt::format(", {} on the CPU checker alone", k.cpu_calls) : "",
      k.audited_calls, k.disagreements, k.disagreements == 1 ? "" : "s");
}

}  // namespace dcp
