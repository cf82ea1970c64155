#include "run_report.h"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "errors.h"

namespace dcp {

Counts count_results(const std::vector<CaseResult>& cases) {
  Counts c;
  for (const auto& r : cases) {
    ++c.total;
    switch (r.status) {
      case CaseStatus::kPass: ++c.passed; break;
      case CaseStatus::kFail: ++c.failed; break;
      case CaseStatus::kError: ++c.errors; break;
      case CaseStatus::kSkipped: ++c.skipped; break;
    }
  }
  return c;
}

bool is_kernel_error(const CaseResult& r) {
  return r.status == CaseStatus::kError && is_kernel_failure(r.failure);
}

std::string failure_type(const CaseResult& r) {
  if (r.status != CaseStatus::kFail && r.status != CaseStatus::kError) return "";
  // A failed case nobody typed is the harness's own bug (as exit_code.h counts it).
  return r.failure == FailureKind::kNone ? "harness" : std::string(to_string(r.failure));
}

std::string verdict_word(int exit_code) {
  switch (exit_code) {
    case kExitPass: return "PASS";
    case kExitKernelFailure: return "FAIL";
    case kExitHarness: return "HARNESS ERROR";
    case kExitUsage: return "USAGE ERROR";
    default: return "INTERRUPTED";
  }
}

std::string iso8601_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace dcp
