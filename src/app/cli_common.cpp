#include "cli_common.h"

#include <atomic>
#include <csignal>
#include <iterator>

#include <fmt/format.h>

#include "errors.h"
#include "suites.h"

namespace dcp {
namespace {

std::atomic<int>& received_signal() {
  static std::atomic<int> signo{0};  // written only by the handler below
  static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");
  return signo;
}

constexpr int kSignals[] = {SIGINT, SIGTERM};

void on_signal(int signo) {
  int expected = 0;
  if (!received_signal().compare_exchange_strong(expected, signo)) {
    std::signal(signo, SIG_DFL);
    std::raise(signo);
  }
}

}  // namespace

SuiteOptions suite_options(int world, const Geometry& geometry, const CaseSelection& sel,
                           const RunTarget& target) {
  SuiteOptions opts;
  opts.world = world;
  opts.geometry = geometry;
  opts.base_seed = sel.seed;
  opts.skip_reason = skip_reason_fn(target);
  return opts;
}

std::vector<Case> select_cases(int world, const Geometry& geometry, const CaseSelection& sel,
                               const RunTarget& target) {
  std::vector<Case> all = build_suite(sel.suite, suite_options(world, geometry, sel, target));
  std::vector<Case> picked;
  for (auto& c : all) {
    if (sel.matches(format_case_id(c))) picked.push_back(std::move(c));
  }
  if (picked.empty()) {
    throw UsageError(fmt::format("--filter '{}' matches none of the {} cases of suite {} (see "
                                 "`dcp-check list --suite {}`)",
                                 sel.filter, all.size(), sel.suite, sel.suite));
  }
  return picked;
}

std::string describe_groups(int world) {
  std::string out;
  for (int size : dcp_sizes_for_world(world)) {
    out += fmt::format("{}dcp{} x{}", out.empty() ? "" : ", ", size, world / size);
  }
  return out;
}

struct InterruptGuard::Saved {
  struct sigaction previous[std::size(kSignals)];
};

InterruptGuard::InterruptGuard() : saved_(std::make_unique<Saved>()) {
  received_signal().store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    sigaction(kSignals[i], &sa, &saved_->previous[i]);
  }
}

InterruptGuard::~InterruptGuard() {
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    sigaction(kSignals[i], &saved_->previous[i], nullptr);
  }
}

int InterruptGuard::signal_received() const { return received_signal().load(); }

RunReport make_run_report(std::string command, const std::vector<std::string>& argv,
                          const SessionConfig& config) {
  RunReport report;
  report.command = std::move(command);
  report.argv = argv;
  report.config = config;
  report.started_at = iso8601_now();
  return report;
}

const char* signal_name(int signo) { return signo == SIGINT ? "SIGINT" : "SIGTERM"; }

CaseResult skipped_result(const Case& c, const std::string& suite, const std::string& reason,
                          const std::string& replay) {
  CaseResult r;
  r.case_id = format_case_id(c);
  r.scenario = c;
  r.suite = suite;
  r.status = CaseStatus::kSkipped;
  r.message = reason;
  r.replay = replay;
  return r;
}

CaseResult error_result(const Case& c, const std::string& suite, const std::exception& e,
                        const std::string& replay) {
  CaseResult r = skipped_result(c, suite, e.what(), replay);
  r.status = CaseStatus::kError;
  RankCaseResult rank;
  rank.case_id = r.case_id;
  rank.rank = -1;  // the supervisor, not a worker
  rank.error = e.what();
  rank.failure = failure_kind_of(e);
  r.ranks.push_back(rank);
  r.failure = rank.failure;
  return r;
}

CaseResult result_or_error(const Case& c, const std::string& suite, const std::string& replay,
                           const std::function<CaseResult()>& run, bool& threw) {
  try {
    return run();
  } catch (const KernelFault& e) {
    threw = true;
    return error_result(c, suite, e, replay);
  } catch (const HarnessError& e) {
    threw = true;
    return error_result(c, suite, e, replay);
  }
}

std::string sanitize_note(const SessionConfig& config) {
  return fmt::format(
      "every worker runs under compute-sanitizer --tool {} ({}): MPS off, launches not observed "
      "(CUPTI and the sanitizer cannot both attach), per-call deadlines x{:g} ({:g} s); API errors "
      "are left to the harness's own checks",
      config.sanitize_tool, config.sanitizer_path, kSanitizedTimeoutScale,
      effective_timeout_s(config));
}

}  // namespace dcp
