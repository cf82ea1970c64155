#include "report_terminal.h"

#include <cstdio>
#include <string>

#include <doctest/doctest.h>

#include "exit_code.h"
#include "geometry.h"
#include "run_report.h"

namespace dcp {
namespace {

Case tiny_case(ExecMode mode, int tokens) {
  Case c;
  c.geometry = *find_geometry("tiny");
  c.mode = mode;
  c.num_calls = mode == ExecMode::kEager ? 1 : 3;
  c.num_tokens = tokens;
  c.seed = 0x1234 + tokens;
  return c;
}

// kFail: a mismatch; kError: `kind` (a hang unless told).
CaseResult result(const Case& c, CaseStatus status, FailureKind kind = FailureKind::kHang) {
  CaseResult r;
  r.case_id = format_case_id(c);
  r.scenario = c;
  r.suite = "default";
  r.status = status;
  r.replay = "dcp-check replay w2-" + r.case_id + " --backend host";
  r.elapsed_ms = 10 + c.num_tokens;
  RankCaseResult k;
  k.case_id = r.case_id;
  k.rank = 1;
  k.passed = status == CaseStatus::kPass;
  if (status == CaseStatus::kFail) kind = FailureKind::kMismatch;
  if (status == CaseStatus::kPass || status == CaseStatus::kSkipped) kind = FailureKind::kNone;
  k.failure = kind;
  r.failure = kind;
  if (status == CaseStatus::kFail) {
    r.message = "1 of 64 elements wrong";
    k.num_mismatches = 1;
    Mismatch m;
    m.rank = 1;
    m.token = 2;
    m.head = 1;
    m.dim = 7;
    m.got = 1.5;
    m.want = 1.25;
    m.err_ulps = 32;
    m.tolerance_ulps = 1;
    m.likely_source = "source 0's partial, unweighted";
    k.first_mismatches.push_back(m);
  }
  if (status == CaseStatus::kError) {
    r.message = is_kernel_failure(kind) ? "hang: rank 1 waits for rank 0" : "socket closed";
    k.error = r.message;
  }
  r.ranks.push_back(k);
  return r;
}

// Captures what a reporter prints.
std::string render(int verbosity, const RunReport& report) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  TerminalStyle style;
  style.verbosity = verbosity;
  TerminalReporter term(f, style);
  term.begin("header line", static_cast<int>(report.cases.size()));
  for (size_t i = 0; i < report.cases.size(); ++i) {
    term.case_started(static_cast<int>(i), report.cases[i].case_id);
    term.case_finished(static_cast<int>(i), report.cases[i]);
  }
  term.summary(report);
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

RunReport sample_report() {
  RunReport report;
  report.command = "run";
  report.config.backend = BackendKind::kHost;
  report.config.geometry = *find_geometry("tiny");
  report.cases = {
      result(tiny_case(ExecMode::kGraph, 1), CaseStatus::kFail),
      result(tiny_case(ExecMode::kGraph, 2), CaseStatus::kFail),
      result(tiny_case(ExecMode::kEager, 3), CaseStatus::kPass),
      result(tiny_case(ExecMode::kEager, 4), CaseStatus::kPass),
  };
  report.exit_code = exit_code(findings_of(report.cases, 0));
  return report;
}

}  // namespace

TEST_CASE("failure types for JUnit and JSON are the case's kind, never its message") {
  const Case c = tiny_case(ExecMode::kEager, 1);
  CHECK(failure_type(result(c, CaseStatus::kPass)).empty());
  CHECK(failure_type(result(c, CaseStatus::kSkipped)).empty());
  CHECK(failure_type(result(c, CaseStatus::kFail)) == "mismatch");
  CHECK(failure_type(result(c, CaseStatus::kError)) == "hang");
  CaseResult trap = result(c, CaseStatus::kError, FailureKind::kTrap);
  trap.message = "hang: the message says hang, the kind says trap";
  CHECK(failure_type(trap) == "trap");
  CHECK(failure_type(result(c, CaseStatus::kError, FailureKind::kHarness)) == "harness");
  CHECK(failure_type(result(c, CaseStatus::kError, FailureKind::kNone)) == "harness");  // untyped
}

TEST_CASE("failures grouped by axis value: the shared axis value comes first, at 100%") {
  const RunReport report = sample_report();
  const auto lines = failures_by_axis(report.cases);
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.front().find("2 failed / 2 (all)") != std::string::npos);
  bool mode_graph = false;
  for (const auto& l : lines) mode_graph |= l == "mode=graph: 2 failed / 2 (all)";
  CHECK(mode_graph);
  // Axis values with no failure never appear.
  for (const auto& l : lines) CHECK(l.find("mode=eager") == std::string::npos);
}

TEST_CASE("failures grouped by axis value come from each result's Case, not its id") {
  RunReport report = sample_report();
  for (CaseResult& r : report.cases) r.case_id = "not-an-id";  // never re-parsed
  CaseResult unknown = result(tiny_case(ExecMode::kGraph, 5), CaseStatus::kFail);
  unknown.scenario.reset();  // an id the supervisor could not parse: left out
  report.cases.push_back(unknown);
  const auto lines = failures_by_axis(report.cases);
  bool mode_graph = false;
  for (const auto& l : lines) mode_graph |= l == "mode=graph: 2 failed / 2 (all)";
  CHECK(mode_graph);
}

TEST_CASE("summary: verdict last, counts, mismatch coordinates, replay lines") {
  const std::string out = render(0, sample_report());
  CHECK(out.find("header line") != std::string::npos);
  CHECK(out.find("rank 1 op 0 token 2 head 1 dim 7: got 1.5 want 1.25 (32 ulps") !=
        std::string::npos);
  CHECK(out.find("likely source 0's partial") != std::string::npos);
  CHECK(out.find("dcp-check replay w2-") != std::string::npos);
  CHECK(out.find("mode=graph: 2 failed / 2") != std::string::npos);
  CHECK(out.find("slowest cases:") != std::string::npos);
  CHECK(out.find("\x1b[") == std::string::npos);  // no colour off a terminal
  const std::string last = out.substr(out.rfind('\n', out.size() - 2) + 1);
  CHECK(last.rfind("FAIL: 4 cases: 2 passed, 2 failed, 0 errors, 0 skipped", 0) == 0);
}

TEST_CASE("-q prints failures and the verdict only; -v prints every case") {
  const RunReport report = sample_report();
  const std::string quiet = render(-1, report);
  CHECK(quiet.find("header line") == std::string::npos);
  CHECK(quiet.find("slowest") == std::string::npos);
  CHECK(quiet.find("PASS  [") == std::string::npos);
  CHECK(quiet.find("replay") != std::string::npos);
  CHECK(quiet.find("FAIL: 4 cases") != std::string::npos);
  const std::string verbose = render(1, report);
  CHECK(verbose.find("PASS  [3/4]") != std::string::npos);
  CHECK(verbose.find("PASS  [4/4]") != std::string::npos);
  const std::string normal = render(0, report);
  CHECK(normal.find("PASS  [3/4]") == std::string::npos);
}

TEST_CASE("colour never with NO_COLOR, never off a terminal") {
  setenv("NO_COLOR", "1", 1);
  CHECK_FALSE(detect_terminal_style(0).color);
  unsetenv("NO_COLOR");
  if (!detect_terminal_style(0).tty) CHECK_FALSE(detect_terminal_style(0).color);
}

}  // namespace dcp

namespace dcp {
namespace {

TEST_CASE("--against: the agreement line sums ranks and cases, and names the largest difference") {
  SessionConfig config;
  config.kernel.name = "direct";
  config.against = config.kernel;
  config.against->name = "other";
  std::vector<CaseResult> cases(2);
  for (int i = 0; i < 2; ++i) {
    RankCaseResult k;
    Agreement a;
    a.output.num_compared = 600000;
    a.output.num_differing = 150 + i;
    a.output.max_ulps = 1 + i;
    a.output.max_at = Mismatch{0, 2, 5, 3, 17, 0.000438690186, 0.000436782837, 1.0 + i, 1, ""};
    k.agreement = a;
    cases[static_cast<size_t>(i)].ranks.push_back(k);
  }
  const std::optional<Agreement> total = run_agreement(cases);
  REQUIRE(total.has_value());
  CHECK(total->output.num_compared == 1200000);
  CHECK(total->output.num_differing == 301);
  CHECK(total->output.max_ulps == 2);
  const std::string line = agreement_line(*total, config);
  CHECK(line ==
        "agreement: kernel 'direct' and --against 'other' agree within tolerance on 1,200,000 "
        "elements; 301 differ bitwise, max 2 ulp at rank 0 op 2 token 5 head 3 dim 17 "
        "(0.000436782837 vs 0.000438690186)");
  Agreement bad = *total;
  bad.exact = true;
  bad.output.num_beyond = 301;
  CHECK(agreement_line(bad, config).find("DISAGREE: 301 of 1,200,000 elements beyond bit "
                                         "identity (--against-exact)") != std::string::npos);
  CHECK_FALSE(run_agreement({CaseResult{}}).has_value());
}

}  // namespace
}  // namespace dcp

namespace dcp {
namespace {

TEST_CASE("memory stress: its setting is printed when a memory-stress case ran, not otherwise") {
  RunReport report = sample_report();
  report.environment = EnvironmentInfo{};
  report.environment->memory_stress = "st-ld on 8 KiB, 1 block of 256 threads per SM (default)";
  CHECK(render(0, report).find("memory stress: st-ld on 8 KiB") == std::string::npos);
  report.cases[2].scenario->mstress = true;
  CHECK(render(0, report).find("memory stress: st-ld on 8 KiB") != std::string::npos);
  report.cases[2].status = CaseStatus::kSkipped;
  CHECK(render(0, report).find("memory stress:") == std::string::npos);
}

}  // namespace
}  // namespace dcp
