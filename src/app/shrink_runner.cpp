#include "shrink_runner.h"

#include <fmt/format.h>

#include <chrono>

#include "cli_common.h"
#include "errors.h"
#include "replay.h"
#include "shrink.h"
#include "supervisor_signals.h"

namespace dcp {

CaseResult RestartingSession::run(const Case& c, const std::string& suite,
                                  const std::vector<Case>& upcoming) {
  const std::string replay = replay_command(config_, config_.world, c);
  // Cases sent ahead before this one end first: if one kills the session,
  // this case gets a fresh one rather than a skip, unless what killed it was
  // Ctrl-C (the dead session then answers "not run: interrupted").
  bool interrupted_in_drain = false;
  if (session_ && !session_->dead()) {
    session_->drain_sent_ahead(&c);
    interrupted_in_drain = session_->dead() && interrupted();
  }
  if ((!session_ || session_->dead()) && !interrupted_in_drain) {
    const auto start = std::chrono::steady_clock::now();
    retire();  // tear the dead one down before spawning new workers
    session_ = std::make_unique<Session>(config_);
    env_ = session_->environment();
    ++num_started_;
    startup_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  bool threw = false;
  CaseResult r = result_or_error(c, suite, replay, [&] { return session_->run_case(c, suite, upcoming); }, threw);
  if (threw) retire();
  if (r.case_id.empty()) r.case_id = format_case_id(c);
  if (!r.scenario) r.scenario = c;
  if (r.suite.empty()) r.suite = suite;
  if (r.replay.empty()) r.replay = replay;
  return r;
}

void RestartingSession::retire() {
  if (!session_) return;
  session_->shut_down();  // a second call returns at once
  const auto& late = session_->late_findings();
  late_findings_.insert(late_findings_.end(), late.begin(), late.end());
  session_.reset();
}

ShutdownTimes RestartingSession::shut_down(double* total_s) {
  const auto start = std::chrono::steady_clock::now();
  ShutdownTimes times;
  if (session_) times = session_->shut_down();
  retire();
  *total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return times;
}

std::string describe_shrink(const ShrinkOutcome& o, double seconds) {
  return fmt::format("{} step{}, {} attempt{} in {:.2f}s ({})", o.num_steps,
                     o.num_steps == 1 ? "" : "s", o.num_attempts, o.num_attempts == 1 ? "" : "s",
                     seconds,
                     o.reached_fixpoint ? "no smaller variant fails" : "stopped: " + o.stop_reason);
}

ShrinkOutcome shrink_and_print(RestartingSession& session, const Case& failing,
                               const CaseResult& failing_result, const ShrinkLimits& limits,
                               TerminalReporter& term) {
  const auto start = std::chrono::steady_clock::now();
  term.info(fmt::format("shrinking {} (measure {}) ...", format_case_id(failing),
                        shrink_measure(failing)));
  int num_steps = 0;
  auto runner = [&](const Case& cand) {
    CaseResult r = session.run(cand, "shrink");
    // The shrinker takes the first candidate that fails the same way, so each
    // such result is exactly one accepted step.
    if (same_failure(failing_result, r)) {
      term.info(fmt::format("  step {}: {} still fails", ++num_steps, r.case_id));
    }
    return r;
  };
  ShrinkOutcome o = shrink_case(failing, failing_result, runner, shrink_candidates, limits);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Case& m = o.minimal;
  term.note("shrunk: " + describe_shrink(o, seconds));
  term.note(fmt::format("minimal failing case: {} (measure {})", format_case_id(m),
                        shrink_measure(m)));
  if (!o.minimal_result.message.empty()) term.note("  " + o.minimal_result.message);
  term.note("  replay token: " + format_replay_token(session.config().world, m));
  term.note("  " + replay_command(session.config(), session.config().world, m));
  return o;
}

}  // namespace dcp
