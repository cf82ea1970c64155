#include "report_junit.h"

#include <map>

#include <fmt/format.h>

#include "report_json.h"
#include "report_terminal.h"

namespace dcp {
namespace {

struct SuiteTally {
  std::vector<const CaseResult*> cases;
  int failures = 0;
  int errors = 0;
  int skipped = 0;
  double time_s = 0;
};

// JUnit's split: <failure> = the thing under test failed, <error> = the test
// could not run properly. A kernel hang or trap is the kernel failing.
bool is_junit_failure(const CaseResult& r) {
  return r.status == CaseStatus::kFail || (r.status == CaseStatus::kError && is_kernel_error(r));
}
bool is_junit_error(const CaseResult& r) {
  return r.status == CaseStatus::kError && !is_kernel_error(r);
}

std::string failure_body(const CaseResult& r, const SessionConfig& config) {
  std::string body = r.message + "\n";
  for (const auto& rank : r.ranks) {
    if (!rank.error.empty()) body += fmt::format("rank {}: {}\n", rank.rank, rank.error);
    if (rank.num_mismatches > 0) {
      body += fmt::format("rank {}: {} of {} elements wrong ({} NaN)\n", rank.rank,
                          rank.num_mismatches, rank.num_checked, rank.num_nan);
    }
    for (const auto& m : rank.first_mismatches) body += "  " + format_mismatch(m) + "\n";
  }
  if (const std::optional<Agreement> a = case_agreement(r)) body += agreement_line(*a, config) + "\n";
  body += "replay: " + r.replay + "\n";
  return body;
}

void append_properties(std::string& xml, const RunReport& report) {
  const SessionConfig& c = report.config;
  std::vector<std::pair<std::string, std::string>> props = {
      {"backend", c.backend == BackendKind::kHost ? "host" : "gpu"},
      {"world", std::to_string(c.world)},
      {"geometry", c.geometry.name.empty() ? "custom" : c.geometry.name},
      {"seed", std::to_string(report.seed)},
      {"kernel", c.kernel.spec},
      {"kernel_name", c.kernel.name},
      {"kernel_version", c.kernel.version},
      {"kernel_path", c.kernel.path},
      {"kernel_sha256", c.kernel.sha256},
      {"against", c.against ? c.against->spec : std::string()},
  };
  if (report.environment) {
    props.emplace_back("mps", report.environment->mps_mode);
    props.emplace_back("git_revision", report.environment->git_revision);
    if (!report.environment->gpus.empty()) props.emplace_back("gpu", report.environment->gpus[0].name);
  }
  xml += "    <properties>\n";
  for (const auto& [k, v] : props) {
    if (v.empty()) continue;
    xml += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(k), xml_escape(v));
  }
  xml += "    </properties>\n";
}

void append_testcase(std::string& xml, const std::string& suite, const CaseResult& r,
                     const SessionConfig& config) {
  xml += fmt::format("    <testcase classname=\"dcp-check.{}\" name=\"{}\" time=\"{:.3f}\"",
                     xml_escape(suite), xml_escape(r.case_id), r.elapsed_ms / 1000);
  if (r.status == CaseStatus::kPass) {
    xml += "/>\n";
    return;
  }
  xml += ">\n";
  const std::string type = failure_type(r);
  if (is_junit_failure(r)) {
    xml += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                       xml_escape(r.message), xml_escape(type), xml_escape(failure_body(r, config)));
  } else if (is_junit_error(r)) {
    xml += fmt::format("      <error message=\"{}\" type=\"{}\">{}</error>\n",
                       xml_escape(r.message), xml_escape(type), xml_escape(failure_body(r, config)));
  } else {
    xml += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(r.message));
  }
  xml += "    </testcase>\n";
}

// The JUnit schema's timestamp has no zone designator; ours are UTC.
std::string junit_timestamp(const std::string& iso) {
  std::string t = iso.empty() ? "1970-01-01T00:00:00Z" : iso;
  if (!t.empty() && t.back() == 'Z') t.pop_back();
  return xml_escape(t);
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(text[i]);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows only tab, LF and CR below 0x20 (even as references).
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') {
          out += '?';
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out;
}

std::string junit_xml(const RunReport& report) {
  std::map<std::string, SuiteTally> suites;  // sorted by name: stable output
  for (const auto& r : report.cases) {
    const std::string name = r.suite.empty() ? (report.suite.empty() ? report.command : report.suite)
                                             : r.suite;
    SuiteTally& t = suites[name];
    t.cases.push_back(&r);
    t.failures += is_junit_failure(r);
    t.errors += is_junit_error(r);
    t.skipped += r.status == CaseStatus::kSkipped;
    t.time_s += r.elapsed_ms / 1000;
  }
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  for (const auto& [name, t] : suites) {
    tests += static_cast<int>(t.cases.size());
    failures += t.failures;
    errors += t.errors;
    skipped += t.skipped;
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format(
      "<testsuites name=\"dcp-check\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
      "time=\"{:.3f}\">\n",
      tests, failures, errors, skipped, report.wall_s);
  int suite_id = 0;
  for (const auto& [name, t] : suites) {
    xml += fmt::format(
        "  <testsuite name=\"dcp-check.{}\" id=\"{}\" package=\"dcp-check\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
        "skipped=\"{}\" time=\"{:.3f}\" timestamp=\"{}\" hostname=\"{}\">\n",
        xml_escape(name), suite_id++, t.cases.size(), t.failures, t.errors, t.skipped, t.time_s,
        junit_timestamp(report.started_at),
        xml_escape(report.environment ? report.environment->hostname : std::string("localhost")));
    append_properties(xml, report);
    for (const CaseResult* r : t.cases) append_testcase(xml, name, *r, report.config);
    xml += "    <system-out/>\n    <system-err/>\n  </testsuite>\n";
  }
  xml += "</testsuites>\n";
  return xml;
}

}  // namespace dcp
