#include "run_report.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "errors.h"

namespace dcp {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

bool contains_any(const std::string& text, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](const char* w) { return text.find(w) != std::string::npos; });
}

}  // namespace

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
  return std::any_of(r.ranks.begin(), r.ranks.end(),
                     [](const RankCaseResult& k) { return k.error_kind == "kernel"; });
}

std::string failure_type(const CaseResult& r) {
  if (r.status == CaseStatus::kFail) {
    int64_t mismatches = 0;
    int64_t nans = 0;
    for (const auto& k : r.ranks) {
      mismatches += k.num_mismatches;
      nans += k.num_nan;
    }
    return mismatches > 0 && nans == mismatches ? "nan" : "mismatch";
  }
  if (r.status != CaseStatus::kError) return "";
  if (!is_kernel_error(r)) return "harness";
  // The session words its diagnoses; classify for JUnit's type attribute.
  std::string text = lower(r.message);
  for (const auto& k : r.ranks) text += " " + lower(k.error);
  if (contains_any(text, {"trap"})) return "trap";
  if (contains_any(text, {"hang", "deadline", "timed out", "timeout", "waits for"})) return "hang";
  if (contains_any(text, {"signal", "killed", "crash", "exited"})) return "crash";
  return "kernel-error";
}

int exit_code_for(const std::vector<CaseResult>& cases, int interrupted_by) {
  if (interrupted_by != 0) return 128 + interrupted_by;
  bool kernel = false;
  bool harness = false;
  for (const auto& r : cases) {
    if (r.status == CaseStatus::kFail) kernel = true;
    if (r.status == CaseStatus::kError) (is_kernel_error(r) ? kernel : harness) = true;
  }
  if (kernel) return kExitKernelFailure;
  if (harness) return kExitHarness;
  // Nothing ran: a gate must not turn green on a kernel that skipped everything.
  const bool all_skipped = !cases.empty() && std::all_of(cases.begin(), cases.end(), [](const auto& r) {
    return r.status == CaseStatus::kSkipped;
  });
  if (all_skipped) return kExitUsage;
  return kExitPass;
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
