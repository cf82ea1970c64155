#include "report_junit.h"

#include <string>

#include <doctest/doctest.h>

#include "run_report.h"

namespace dcp {
namespace {

CaseResult make(const std::string& id, CaseStatus status, FailureKind kind,
                const std::string& message) {
  CaseResult r;
  r.case_id = id;
  r.suite = "default";
  r.status = status;
  r.message = message;
  r.replay = "dcp-check replay w2-" + id;
  r.elapsed_ms = 1500;
  RankCaseResult k;
  k.rank = 0;
  k.failure = kind;
  r.failure = kind;
  r.ranks.push_back(k);
  return r;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("xml_escape escapes markup and drops characters XML 1.0 forbids") {
  CHECK(xml_escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&apos;");
  CHECK(xml_escape(std::string("x\x01y\x1bz", 5)) == "x?y?z");
  CHECK(xml_escape("tab\tnl\n") == "tab\tnl\n");
}

TEST_CASE("JUnit: one testcase per case, failure/error/skipped children and matching counts") {
  RunReport report;
  report.command = "run";
  report.suite = "default";
  report.started_at = "2026-01-02T03:04:05Z";
  report.cases = {
      make("c-pass", CaseStatus::kPass, FailureKind::kNone, ""),
      make("c-fail", CaseStatus::kFail, FailureKind::kMismatch, "3 of 10 <wrong> & \"bad\""),
      make("c-hang", CaseStatus::kError, FailureKind::kHang, "hang: rank 1 waits for rank 0"),
      make("c-harness", CaseStatus::kError, FailureKind::kHarness, "socket closed"),
      make("c-skip", CaseStatus::kSkipped, FailureKind::kNone, "not run: the session ended"),
  };
  report.cases[1].ranks[0].num_mismatches = 3;
  const std::string xml = junit_xml(report);
  CHECK(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>", 0) == 0);
  CHECK(xml.find("<testsuites name=\"dcp-check\" tests=\"5\" failures=\"2\" errors=\"1\" skipped=\"1\"") !=
        std::string::npos);
  CHECK(count(xml, "<testsuite ") == 1);
  CHECK(count(xml, "<testcase ") == 5);
  CHECK(xml.find("classname=\"dcp-check.default\" name=\"c-pass\" time=\"1.500\"/>") != std::string::npos);
  CHECK(xml.find("<failure message=\"3 of 10 &lt;wrong&gt; &amp; &quot;bad&quot;\" type=\"mismatch\">") !=
        std::string::npos);
  CHECK(xml.find("type=\"hang\"") != std::string::npos);
  CHECK(xml.find("<error message=\"socket closed\" type=\"harness\">") != std::string::npos);
  CHECK(xml.find("<skipped message=\"not run: the session ended\"/>") != std::string::npos);
  CHECK(xml.find("replay: dcp-check replay w2-c-fail") != std::string::npos);
  CHECK(xml.find("timestamp=\"2026-01-02T03:04:05\"") != std::string::npos);  // no zone: schema
  CHECK(count(xml, "</testcase>") == 4);  // every non-passing case has a child element
  CHECK(xml.size() > 14);
  CHECK(xml.substr(xml.size() - 14) == "</testsuites>\n");
}

TEST_CASE("JUnit: cases of different suites go to different testsuites") {
  RunReport report;
  report.cases = {make("a", CaseStatus::kPass, FailureKind::kNone, ""),
                  make("b", CaseStatus::kPass, FailureKind::kNone, "")};
  report.cases[1].suite = "upstream";
  const std::string xml = junit_xml(report);
  CHECK(count(xml, "<testsuite ") == 2);
  CHECK(xml.find("name=\"dcp-check.upstream\"") != std::string::npos);
  CHECK(xml.find("classname=\"dcp-check.upstream\" name=\"b\"") != std::string::npos);
}

}  // namespace dcp
