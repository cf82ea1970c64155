#include "shrinker.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>
#include <unordered_set>

#include "run_report.h"

namespace dcp {

bool is_kernel_failure(const CaseResult& r) {
  return r.status == CaseStatus::kFail || (r.status == CaseStatus::kError && is_kernel_error(r));
}

bool same_failure(const CaseResult& original, const CaseResult& candidate) {
  return is_kernel_failure(candidate) && candidate.status == original.status;
}

ShrinkOutcome shrink_case(const Case& failing, const CaseResult& failing_result,
                          const CaseRunner& run, const CandidateGenerator& candidates,
                          const ShrinkLimits& limits) {
  if (!is_kernel_failure(failing_result)) {
    throw std::invalid_argument("shrink_case: the starting case must be a kernel failure");
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto seconds_used = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };

  ShrinkOutcome out;
  out.minimal = failing;
  out.minimal_result = failing_result;
  // Ids already run: a candidate of a later case often repeats one that
  // already passed (rerunning it would only spend the budget), and skipping
  // accepted ids too means a candidate generator with a cycle cannot loop.
  std::unordered_set<std::string> seen;
  seen.insert(format_case_id(failing));

  bool progressed = true;
  while (progressed) {
    progressed = false;
    for (const Case& cand : candidates(out.minimal)) {
      std::string id = format_case_id(cand);
      if (seen.count(id) != 0) continue;
      if (out.num_attempts >= limits.max_attempts) {
        out.stop_reason = fmt::format("attempt budget ({})", limits.max_attempts);
        return out;
      }
      if (limits.cancelled && limits.cancelled()) {
        out.stop_reason = "interrupted";
        return out;
      }
      if (seconds_used() >= limits.max_seconds) {
        out.stop_reason = fmt::format("time budget ({:g} s)", limits.max_seconds);
        return out;
      }
      ++out.num_attempts;
      CaseResult result = run(cand);
      seen.insert(std::move(id));
      if (same_failure(failing_result, result)) {
        out.minimal = cand;
        out.minimal_result = std::move(result);
        ++out.num_steps;
        progressed = true;
        break;  // restart from the smaller case: its candidates are smaller still
      }
    }
  }
  out.reached_fixpoint = true;
  out.stop_reason = "fixpoint";
  return out;
}

}  // namespace dcp
