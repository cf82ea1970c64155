#include "results.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace dcp {
namespace {

// JSON has no NaN or infinity (nlohmann writes null); a wrong value is often
// exactly that, so non-finite doubles travel as the strings "nan", "inf", "-inf".
nlohmann::json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double read_number(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw nlohmann::json::type_error::create(302, "bad number string '" + s + "' in " + key, &v);
  }
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  return v.get<double>();
}

}  // namespace

void to_json(nlohmann::json& j, const Mismatch& m) {
  j = nlohmann::json{{"rank", m.rank},
                     {"op_idx", m.op_idx},
                     {"token", m.token},
                     {"head", m.head},
                     {"dim", m.dim},
                     {"got", number(m.got)},
                     {"want", number(m.want)},
                     {"err_ulps", number(m.err_ulps)},
                     {"tolerance_ulps", number(m.tolerance_ulps)},
                     {"likely_source", m.likely_source}};
}

void from_json(const nlohmann::json& j, Mismatch& m) {
  j.at("rank").get_to(m.rank);
  j.at("op_idx").get_to(m.op_idx);
  j.at("token").get_to(m.token);
  j.at("head").get_to(m.head);
  j.at("dim").get_to(m.dim);
  m.got = read_number(j, "got");
  m.want = read_number(j, "want");
  m.err_ulps = read_number(j, "err_ulps");
  m.tolerance_ulps = read_number(j, "tolerance_ulps");
  j.at("likely_source").get_to(m.likely_source);
}

void merge_agreement(Agreement& into, const Agreement& more) {
  into.exact = into.exact || more.exact;
  for (auto part : {&Agreement::output, &Agreement::lse}) {
    AgreementCounts& a = into.*part;
    const AgreementCounts& b = more.*part;
    a.num_compared += b.num_compared;
    a.num_differing += b.num_differing;
    a.num_beyond += b.num_beyond;
    if (b.max_at && (!a.max_at || b.max_ulps > a.max_ulps)) {
      a.max_ulps = b.max_ulps;
      a.max_at = b.max_at;
    }
  }
}

void to_json(nlohmann::json& j, const AgreementCounts& a) {
  j = nlohmann::json{{"compared", a.num_compared},
                     {"differing", a.num_differing},
                     {"beyond_tolerance", a.num_beyond},
                     {"max_ulps", number(a.max_ulps)},
                     {"max_at", a.max_at ? nlohmann::json(*a.max_at) : nlohmann::json(nullptr)}};
}

void from_json(const nlohmann::json& j, AgreementCounts& a) {
  j.at("compared").get_to(a.num_compared);
  j.at("differing").get_to(a.num_differing);
  j.at("beyond_tolerance").get_to(a.num_beyond);
  a.max_ulps = read_number(j, "max_ulps");
  a.max_at.reset();
  if (!j.at("max_at").is_null()) a.max_at = j.at("max_at").get<Mismatch>();
}

void to_json(nlohmann::json& j, const Agreement& a) {
  j = nlohmann::json{{"exact", a.exact}, {"output", a.output}, {"lse", a.lse}};
}

void from_json(const nlohmann::json& j, Agreement& a) {
  j.at("exact").get_to(a.exact);
  j.at("output").get_to(a.output);
  j.at("lse").get_to(a.lse);
}

void to_json(nlohmann::json& j, const PhaseTimes& p) {
  j = nlohmann::json::object();
  for (const PhaseField& f : kPhaseFields) j[f.json_name] = p.*f.ms;
}

// A phase a report of an older build lacks reads as 0.
void from_json(const nlohmann::json& j, PhaseTimes& p) {
  for (const PhaseField& f : kPhaseFields) {
    if (j.contains(f.json_name)) j.at(f.json_name).get_to(p.*f.ms);
  }
}

void to_json(nlohmann::json& j, const CheckTally& k) {
  j = nlohmann::json{{"device_calls", k.device_calls},
                     {"audited_calls", k.audited_calls},
                     {"cpu_calls", k.cpu_calls},
                     {"disagreements", k.disagreements}};
}

void from_json(const nlohmann::json& j, CheckTally& k) {
  j.at("device_calls").get_to(k.device_calls);
  j.at("audited_calls").get_to(k.audited_calls);
  j.at("cpu_calls").get_to(k.cpu_calls);
  j.at("disagreements").get_to(k.disagreements);
}

void to_json(nlohmann::json& j, const RankCaseResult& r) {
  j = nlohmann::json{{"case_id", r.case_id},
                     {"rank", r.rank},
                     {"passed", r.passed},
                     {"num_checked", r.num_checked},
                     {"num_mismatches", r.num_mismatches},
                     {"num_nan", r.num_nan},
                     {"first_mismatches", r.first_mismatches},
                     {"output_hash", r.output_hash},
                     {"elapsed_ms", number(r.elapsed_ms)},
                     {"phases", r.phases},
                     {"check", r.check},
                     {"worker_ms", r.worker_ms},
                     {"error", r.error},
                     {"note", r.note},
                     {"failure", to_string(r.failure)},
                     {"error_kind", error_class(r.failure)}};
  if (r.agreement) j["agreement"] = *r.agreement;
}

void from_json(const nlohmann::json& j, RankCaseResult& r) {
  j.at("case_id").get_to(r.case_id);
  j.at("rank").get_to(r.rank);
  j.at("passed").get_to(r.passed);
  j.at("num_checked").get_to(r.num_checked);
  j.at("num_mismatches").get_to(r.num_mismatches);
  j.at("num_nan").get_to(r.num_nan);
  j.at("first_mismatches").get_to(r.first_mismatches);
  j.at("output_hash").get_to(r.output_hash);
  r.elapsed_ms = read_number(j, "elapsed_ms");
  if (j.contains("phases")) j.at("phases").get_to(r.phases);
  if (j.contains("check")) j.at("check").get_to(r.check);
  if (j.contains("worker_ms")) r.worker_ms = read_number(j, "worker_ms");
  j.at("error").get_to(r.error);
  if (j.contains("note")) j.at("note").get_to(r.note);
  const std::string name = j.at("failure").get<std::string>();
  const std::optional<FailureKind> kind = failure_kind_from_string(name);
  if (!kind) {
    throw nlohmann::json::type_error::create(302, "unknown failure kind '" + name + "'", &j);
  }
  r.failure = *kind;
  r.agreement.reset();
  if (j.contains("agreement")) r.agreement = j.at("agreement").get<Agreement>();
}

FailureKind check_failure(int64_t num_mismatches, int64_t num_nan, bool passed) {
  if (num_mismatches > 0)
    return num_nan == num_mismatches ? FailureKind::kNan : FailureKind::kMismatch;
  return passed ? FailureKind::kNone : FailureKind::kMismatch;  // nothing checked is no pass
}

FailureKind case_failure(const std::vector<RankCaseResult>& ranks) {
  FailureKind k = FailureKind::kNone;
  for (const RankCaseResult& r : ranks) k = headline(k, r.failure);
  return k;
}

std::string_view to_string(CaseStatus s) {
  switch (s) {
    case CaseStatus::kPass:
      return "pass";
    case CaseStatus::kFail:
      return "fail";
    case CaseStatus::kError:
      return "error";
    case CaseStatus::kSkipped:
      return "skipped";
  }
  return "?";
}

}  // namespace dcp

namespace dcp {

void add_sanitizer_findings(CaseResult& r, const std::vector<SanitizerFinding>& findings,
                            const std::string& when) {
  if (findings.empty()) return;
  const bool first = r.sanitizer_findings.empty();
  r.sanitizer_findings.insert(r.sanitizer_findings.end(), findings.begin(), findings.end());
  if (r.status == CaseStatus::kPass || r.status == CaseStatus::kSkipped)
    r.status = CaseStatus::kFail;
  r.failure = FailureKind::kSanitizer;
  for (const SanitizerFinding& f : findings) {
    r.diagnosis.push_back(fmt::format("compute-sanitizer{}: {}",
                                      when.empty() ? "" : " (" + when + ")", f.describe()));
  }
  if (first) {
    const size_t n = r.sanitizer_findings.size();
    std::string head =
        fmt::format("compute-sanitizer {} reported {} error{}{}: {}", findings.front().tool, n,
                    n == 1 ? "" : "s", when.empty() ? "" : " " + when, findings.front().describe());
    r.message = r.message.empty() ? head : head + "; " + r.message;
  }
}

}  // namespace dcp
