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

std::optional<Agreement> case_agreement(const CaseResult& r) {
  std::optional<Agreement> out;
  for (const RankCaseResult& k : r.ranks) {
    if (!k.agreement) continue;
    if (!out) out.emplace();
    merge_agreement(*out, *k.agreement);
  }
  return out;
}

std::optional<Agreement> run_agreement(const std::vector<CaseResult>& cases) {
  std::optional<Agreement> out;
  for (const CaseResult& r : cases) {
    const std::optional<Agreement> a = case_agreement(r);
    if (!a) continue;
    if (!out) out.emplace();
    merge_agreement(*out, *a);
  }
  return out;
}

namespace {

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

// "312 differ bitwise, max 1 ulp at rank 0 op 2 token 5 head 3 dim 17 (a vs b)".
std::string differences(const AgreementCounts& a, const char* unit) {
  if (a.num_differing == 0) return "bit-identical";
  std::string s = fmt::format("{} differ bitwise", with_commas(a.num_differing));
  if (!a.max_at) return s;
  const Mismatch& m = *a.max_at;
  const std::string where = m.dim >= 0 ? fmt::format(" dim {}", m.dim) : std::string();
  return s + fmt::format(", max {:g} {} at rank {} op {} token {} head {}{} ({:.9g} vs {:.9g})",
                         a.max_ulps, unit, m.rank, m.op_idx, m.token, m.head, where, m.want,
                         m.got);
}

}  // namespace

std::string agreement_line(const Agreement& a, const SessionConfig& config) {
  const std::string names =
      fmt::format("kernel '{}' and --against '{}'", config.kernel.name,
                  config.against ? config.against->name : std::string("?"));
  const int64_t beyond = a.output.num_beyond + a.lse.num_beyond;
  const char* rule = a.exact ? "bit for bit (--against-exact)" : "within tolerance";
  std::string line =
      beyond == 0
          ? fmt::format("agreement: {} agree {} on {} elements; {}", names, rule,
                        with_commas(a.output.num_compared), differences(a.output, "ulp"))
          : fmt::format("agreement: {} DISAGREE: {} of {} elements beyond {}; {}", names,
                        with_commas(a.output.num_beyond), with_commas(a.output.num_compared),
                        a.exact ? "bit identity (--against-exact)" : "tolerance",
                        differences(a.output, "ulp"));
  if (a.lse.num_compared > 0 || a.lse.num_differing > 0) {
    line += fmt::format("; combined LSE: {} rows, {}{}", with_commas(a.lse.num_compared),
                        differences(a.lse, "fp32 ulp"),
                        a.lse.num_beyond > 0
                            ? fmt::format(", {} beyond", with_commas(a.lse.num_beyond))
                            : std::string());
  }
  return line;
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
