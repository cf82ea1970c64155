#include "litmus_report.h"

#include <fmt/format.h>

namespace dcp {
namespace {

bool ordered(LitmusOrder o) {
  return o == LitmusOrder::kFenced || o == LitmusOrder::kReleaseAcquire;
}

std::string rate_cell(const LitmusTally& t) {
  return fmt::format("{:>9.1f} /M ({} of {})", t.weak_per_million(), t.weak,
                     t.counter ? t.overlapped + t.weak : t.iterations);
}

nlohmann::json tally_json(const LitmusTally& t) {
  nlohmann::json j{{"iterations", t.iterations}, {"overlapped", t.overlapped},
                   {"weak", t.weak},             {"invalid", t.invalid},
                   {"weak_per_million", t.weak_per_million()},
                   {"unit", t.counter ? "reader samples" : "instances"}};
  if (!t.counter) {
    j["outcomes"] = {{"first_then_second", t.outcomes[0]}, {"second_then_first", t.outcomes[1]},
                     {"interleaved", t.outcomes[2]},       {"weak", t.outcomes[3]},
                     {"invalid", t.outcomes[4]}};
  }
  return j;
}

nlohmann::json row_json(const LitmusRow& r) {
  return {{"test", litmus_test_name(r.test)},
          {"shape", shape_name(r.test.shape)},
          {"order", order_name(r.test.order)},
          {"placement", placement_name(r.test.placement)},
          {"scope", r.test.system_scope ? "sys" : "gpu"},
          {"stress", stress_name(r.stress)},
          {"seconds", r.seconds},
          {"tally", tally_json(r.tally)}};
}

}  // namespace

LitmusStress best_stress(const std::vector<LitmusRow>& calibration) {
  LitmusStress best;
  double best_rate = -1;
  for (const auto& row : calibration) {
    const double rate = row.tally.weak_per_million();
    if (rate > best_rate) best_rate = rate, best = row.stress;
  }
  return best;
}

std::vector<std::string> litmus_conclusions(const LitmusReport& r, bool* contradiction) {
  std::vector<std::string> lines;
  *contradiction = false;
  for (LitmusPlacement p : {LitmusPlacement::kBlocks, LitmusPlacement::kStreams,
                            LitmusPlacement::kProcesses}) {
    const LitmusRow* most = nullptr;
    uint64_t could = 0;  // instances or mid-write samples that could have been weak
    for (const auto& row : r.rows) {
      if (row.test.placement != p || row.test.shape != LitmusShape::kMp ||
          row.test.order != LitmusOrder::kRelaxed) {
        continue;
      }
      could += row.tally.counter ? row.tally.overlapped + row.tally.weak : row.tally.iterations;
      if (most == nullptr || row.tally.weak_per_million() > most->tally.weak_per_million()) {
        most = &row;
      }
    }
    if (most == nullptr) continue;
    lines.push_back(
        most->tally.weak > 0
            ? fmt::format("relaxed message passing between {}: weak outcomes observed, up to "
                          "{:.1f} per million ({}, stress {})",
                          placement_name(p), most->tally.weak_per_million(),
                          litmus_test_name(most->test), stress_name(most->stress))
            : fmt::format("relaxed message passing between {}: no weak outcome in any setting "
                          "({} {} that could have shown one)",
                          placement_name(p), could,
                          most->tally.counter ? "samples taken mid-write" : "instances"));
  }
  for (const auto& row : r.rows) {
    if (row.tally.invalid > 0) {
      *contradiction = true;
      lines.push_back(fmt::format("HARNESS BUG: {} (stress {}) read {} values no thread wrote",
                                  litmus_test_name(row.test), stress_name(row.stress),
                                  row.tally.invalid));
    }
    if (ordered(row.test.order) && row.tally.weak > 0) {
      *contradiction = true;
      lines.push_back(fmt::format(
          "CONTRADICTION: {} between {} (stress {}) showed {} weak outcomes, which the PTX "
          "memory model forbids: the litmus harness is wrong or the GPU is",
          litmus_test_name(row.test), placement_name(row.test.placement),
          stress_name(row.stress), row.tally.weak));
    }
  }
  return lines;
}

std::string render_litmus(const LitmusReport& r) {
  std::string out = fmt::format("litmus on {}; MPS {}; seed {:#x}; at least {} per setting\n\n",
                                r.device, r.mps, r.seed, r.iterations);
  out += fmt::format("stress calibration ({} between blocks):\n",
                     litmus_test_name(calibration_test()));
  for (const auto& row : r.calibration) {
    out += fmt::format("  {:<28} {}  {:.1f} s\n", stress_name(row.stress), rate_cell(row.tally),
                       row.seconds);
  }
  out += fmt::format("best stress: {}\n\n", stress_name(r.best));
  out += fmt::format("  {:<28} {:<10} {:<16} {}\n", "test", "between", "stress",
                     "weak outcomes (per million that could show one)");
  for (const auto& row : r.rows) {
    out += fmt::format("  {:<28} {:<10} {:<16} {}\n", litmus_test_name(row.test),
                       placement_name(row.test.placement),
                       row.stress.pattern == StressPattern::kNone ? "none" : "best",
                       rate_cell(row.tally));
  }
  bool contradiction = false;
  out += "\n";
  for (const auto& line : litmus_conclusions(r, &contradiction)) out += line + "\n";
  return out;
}

nlohmann::json litmus_json(const LitmusReport& r) {
  nlohmann::json cal = nlohmann::json::array();
  for (const auto& row : r.calibration) cal.push_back(row_json(row));
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) rows.push_back(row_json(row));
  bool contradiction = false;
  const auto conclusions = litmus_conclusions(r, &contradiction);
  return {{"device", r.device},       {"mps", r.mps},
          {"seed", r.seed},           {"iterations_per_setting", r.iterations},
          {"calibration", cal},       {"best_stress", stress_name(r.best)},
          {"rows", rows},             {"conclusions", conclusions},
          {"contradiction", contradiction}};
}

}  // namespace dcp
