// A Session is one supervisor with its N live workers: spawned, connected,
// workspaces built. Commands (run, replay, stress, shrink, selftest, bench) use
// it to run cases; every failure path still tears everything down (RAII).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench.h"
#include "case.h"
#include "results.h"
#include "run_target.h"
#include "session_config.h"

namespace dcp {

class Session {
 public:
  // Spawns workers and builds every group's workspace. Throws UsageError for a
  // missing GPU/driver (pointing at --backend host), HarnessError otherwise.
  explicit Session(const SessionConfig& config);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs one case on every rank (all groups of its dcp size concurrently).
  // A hang, crash or trap yields kError with the diagnosis in `message`, and
  // the session becomes dead(): later calls return kSkipped immediately.
  // `upcoming`: the cases the caller runs next, in order. They are sent
  // ahead, so each worker starts the next case while it still checks this
  // one's last calls (DESIGN.md "Overlap across cases"). Calling run_case
  // with another case first finishes those sent ahead, dropping their verdicts.
  CaseResult run_case(const Case& c, const std::string& suite,
                      const std::vector<Case>& upcoming = {});
  // Finishes the cases sent ahead up to `keep` (all when it is null or not
  // among them), dropping their verdicts (they may kill the session).
  void drain_sent_ahead(const Case* keep);
  // `dcp-check bench` (GPU backend only; UsageError otherwise): every token
  // count x impl of the spec, timed on one DCP group of the whole world, each
  // followed by an output check. Stops at the first error (the session dies).
  BenchResult run_bench(const BenchSpec& spec);
  bool dead() const;
  // Shuts the session down now (the destructor does it otherwise) and returns
  // how long each part took; later calls return the same times.
  ShutdownTimes shut_down();
  // --sanitize: findings the workers' sanitizers reported only at their
  // teardown, or read while a case was skipped (after shut_down(); run_case
  // attaches the others to their case).
  // The caller reports them against the last case it ran.
  const std::vector<SanitizerFinding>& late_findings() const;
  const EnvironmentInfo& environment() const;
  const SessionConfig& config() const;
  // What this session can run (its kernels and the facts found at start-up):
  // the rule it skips cases by, and what suites for it are generated from.
  const RunTarget& target() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dcp
