// What `stress` and `shrink` share: a session that restarts itself after a
// hang or crash killed it (so the next scenario, or the next shrink
// candidate, still runs), and the shrink step with its printed verdict.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "case.h"
#include "report_terminal.h"
#include "results.h"
#include "session.h"
#include "shrinker.h"

namespace dcp {

class RestartingSession {
 public:
  explicit RestartingSession(const SessionConfig& config) : config_(config) {}

  // Runs one case in the live session, starting a fresh one first when there
  // is none or the last one died. KernelFault/HarnessError thrown mid-case
  // become a kError result (and drop the session); UsageError and a failure to
  // start a session propagate (no environment: nothing else can run either).
  // case_id, suite and replay are always filled in. `upcoming`: Session::run_case's.
  CaseResult run(const Case& c, const std::string& suite, const std::vector<Case>& upcoming = {});

  const SessionConfig& config() const { return config_; }
  // Shuts the live session down now (workers, MPS, files) and returns how
  // long each part took, and the whole in *total_s; zeros when none is live.
  ShutdownTimes shut_down(double* total_s);
  // The environment of the latest session; null before the first one started.
  const EnvironmentInfo* environment() const { return env_ ? &*env_ : nullptr; }
  int num_started() const { return num_started_; }
  // --sanitize: findings reported at the teardown of every session shut down
  // so far (sessions that died, and the last one after shut_down()).
  const std::vector<SanitizerFinding>& late_findings() const { return late_findings_; }
  // Wall seconds spent starting sessions (and tearing dead ones down), so far.
  double startup_s() const { return startup_s_; }

 private:
  SessionConfig config_;
  std::unique_ptr<Session> session_;
  std::optional<EnvironmentInfo> env_;
  int num_started_ = 0;
  double startup_s_ = 0;
  std::vector<SanitizerFinding> late_findings_;
  void retire();  // shuts the session down (keeping its late findings) and drops it
};

// Shrinks a kernel failure with fresh-session restarts, printing progress
// (one line per accepted step, unless -q) and the result: the minimal case,
// its replay line, and how many steps and attempts it took.
ShrinkOutcome shrink_and_print(RestartingSession& session, const Case& failing,
                               const CaseResult& failing_result, const ShrinkLimits& limits,
                               TerminalReporter& term);

// "12 steps, 40 attempts in 3.2s (fixpoint)" for summaries.
std::string describe_shrink(const ShrinkOutcome& o, double seconds);

}  // namespace dcp
