#include "command_lifecycle.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "errors.h"
#include "exit_code.h"
#include "run_report_command.h"

namespace dcp {
namespace {

namespace fs = std::filesystem;

ValidRun host_smoke() {
  RunOptions o;
  o.session.backend = "host";
  o.geometry.name = "tiny";
  o.selection.suite = "smoke";
  return validate_run_options(o);
}

CaseResult passed() {
  CaseResult r;
  r.status = CaseStatus::kPass;
  return r;
}

// The smoke suite through run_cases, each result from `script` (which may
// throw, as a session does when it breaks).
class ScriptedCommand : public RunReportCommand {
 public:
  ScriptedCommand(const ValidRun& v, const ReportOptions& opts,
                  std::function<CaseResult(size_t index)> script)
      : RunReportCommand("run", {"dcp-check", "run"}, v.config, opts), script_(std::move(script)) {
    planned_ = select_cases(v.config.world, v.config.geometry, v.selection);
    report_.suite = v.selection.suite;
  }
  void run(CommandLifecycle& life) override {
    run_cases(life, [this](const Case&) { return script_(calls_++); }, [] { return false; });
  }
  size_t num_planned() const { return planned_.size(); }
  size_t calls() const { return calls_; }

 private:
  std::function<CaseResult(size_t)> script_;
  size_t calls_ = 0;
};

// A scratch directory and the terminal output of one lifecycle.
struct Fixture {
  fs::path dir = fs::temp_directory_path() / ("dcp-lifecycle-test-" + std::to_string(::getpid()));
  std::FILE* out = std::tmpfile();
  Fixture() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    REQUIRE(out != nullptr);
  }
  ~Fixture() {
    std::fclose(out);
    fs::remove_all(dir);
  }
  std::string path(const char* name) const { return (dir / name).string(); }
  std::string terminal() const {
    std::rewind(out);
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, out)) > 0) text.append(buf, n);
    return text;
  }
  std::string last_line() const {
    const std::string text = terminal();
    const size_t end = text.find_last_not_of('\n');
    if (end == std::string::npos) return "";
    const size_t begin = text.rfind('\n', end);
    return text.substr(begin == std::string::npos ? 0 : begin + 1, end - begin);
  }
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("lifecycle: a body that throws still writes its partial reports, then rethrows") {
  Fixture fx;
  const ValidRun v = host_smoke();
  ReportOptions opts;
  opts.json_path = fx.path("r.json");
  opts.junit_path = fx.path("r.xml");
  ScriptedCommand cmd(v, opts, [](size_t i) -> CaseResult {
    if (i == 1) throw HarnessError("socket closed");
    return passed();
  });
  REQUIRE(cmd.num_planned() >= 3);
  CommandLifecycle life(fx.out, TerminalStyle{});
  CHECK_THROWS_AS(life.execute(cmd), HarnessError);

  const nlohmann::json j = read_json(opts.json_path);
  CHECK(j["exit_code"] == kExitHarness);
  CHECK(j["verdict"] == "HARNESS ERROR");
  REQUIRE(j["cases"].size() == cmd.num_planned());  // every planned case is accounted for
  CHECK(j["cases"][0]["status"] == "pass");
  for (size_t i = 1; i < cmd.num_planned(); ++i) {
    CHECK(j["cases"][i]["status"] == "skipped");
    CHECK(j["cases"][i]["message"] == "not run: the session failed");
  }
  CHECK(fs::exists(opts.junit_path));
  // Written atomically: nothing but the two reports is left in the directory.
  CHECK(std::distance(fs::directory_iterator(fx.dir), fs::directory_iterator()) == 2);
  CHECK(fx.last_line().rfind("HARNESS ERROR: ", 0) == 0);
}

TEST_CASE("lifecycle: an interrupt marks the rest skipped and exits 128 + signal") {
  Fixture fx;
  const ValidRun v = host_smoke();
  ReportOptions opts;
  opts.json_path = fx.path("r.json");
  ScriptedCommand cmd(v, opts, [](size_t i) -> CaseResult {
    if (i == 0) return passed();
    // Ctrl-C reaches the workers too: the case in progress comes back broken.
    std::raise(SIGINT);
    CaseResult r;
    r.status = CaseStatus::kError;
    r.failure = FailureKind::kWorkerDied;
    r.message = "rank 1 killed by signal 2";
    return r;
  });
  CommandLifecycle life(fx.out, TerminalStyle{});
  CHECK(life.execute(cmd) == 128 + SIGINT);
  CHECK(cmd.calls() == 2);  // nothing ran after the signal

  const nlohmann::json j = read_json(opts.json_path);
  CHECK(j["interrupted_by_signal"] == SIGINT);
  CHECK(j["verdict"] == "INTERRUPTED");
  REQUIRE(j["cases"].size() == cmd.num_planned());
  CHECK(j["cases"][0]["status"] == "pass");
  // The case the signal broke is not a failure of the kernel or the harness.
  CHECK(j["cases"][1]["status"] == "skipped");
  CHECK(j["cases"][1]["failure_type"] == "");
  CHECK(j["cases"][1]["message"].get<std::string>().find("interrupted by SIGINT while running") == 0);
  for (size_t i = 2; i < cmd.num_planned(); ++i) {
    CHECK(j["cases"][i]["message"] == "not run: interrupted by SIGINT");
  }
  CHECK(fx.last_line().rfind("INTERRUPTED: ", 0) == 0);
}

TEST_CASE("lifecycle: a report that cannot be written is exit 3, after the verdict line") {
  Fixture fx;
  const ValidRun v = host_smoke();
  ReportOptions opts;
  opts.json_path = fx.path("no-such-dir/r.json");
  opts.junit_path = fx.path("r.xml");
  ScriptedCommand cmd(v, opts, [](size_t) { return passed(); });
  CommandLifecycle life(fx.out, TerminalStyle{});
  int code = -1;
  try {
    life.execute(cmd);
  } catch (const std::exception& e) {
    code = exit_code(findings_of(e));
  }
  CHECK(code == kExitHarness);
  CHECK(fs::exists(opts.junit_path));  // the other report is still written
  CHECK(fx.last_line().rfind("PASS: ", 0) == 0);  // the cases passed; main's error line follows
}

TEST_CASE("lifecycle: after the body threw, a report write failure is only a warning") {
  Fixture fx;
  const ValidRun v = host_smoke();
  ReportOptions opts;
  opts.json_path = fx.path("no-such-dir/r.json");
  ScriptedCommand cmd(v, opts, [](size_t) -> CaseResult {
    throw KernelFault("device trap", FailureKind::kTrap);
  });
  CommandLifecycle life(fx.out, TerminalStyle{});
  CHECK_THROWS_AS(life.execute(cmd), KernelFault);  // the body's error, not the write's
}

TEST_CASE("lifecycle: bad usage from the body prints no summary, the report still says 2") {
  Fixture fx;
  const ValidRun v = host_smoke();
  ReportOptions opts;
  opts.json_path = fx.path("r.json");
  ScriptedCommand cmd(v, opts, [](size_t) -> CaseResult { throw UsageError("no GPU"); });
  CommandLifecycle life(fx.out, TerminalStyle{});
  CHECK_THROWS_AS(life.execute(cmd), UsageError);
  CHECK(fx.terminal().find("USAGE ERROR") == std::string::npos);  // main's one line says it
  const nlohmann::json j = read_json(opts.json_path);
  CHECK(j["exit_code"] == kExitUsage);
  CHECK(j["cases"][0]["message"] == "not run: the session could not start");
}

}  // namespace dcp
