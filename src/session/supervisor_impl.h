// Session internals shared by supervisor.cpp (start-up, event loop, teardown)
// and supervisor_case.cpp (running one case, verdicts, hang/crash diagnosis).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "failure.h"
#include "launch_diagnosis.h"
#include "mps.h"
#include "results.h"
#include "sanitizer.h"
#include "session.h"
#include "socket_channel.h"
#include "status_board.h"
#include "supervisor_process.h"
#include "supervisor_signals.h"

namespace dcp {

using SupervisorClock = std::chrono::steady_clock;

struct WorkerState {
  int rank = 0;
  pid_t pid = -1;
  std::optional<SocketChannel> channel;
  std::optional<ExitInfo> exit;  // set once reaped
  bool ready = false;
  std::optional<RankCaseResult> result;  // of the case in progress
  std::optional<nlohmann::json> bench;   // a bench point's timings ("us"), with its result
  FailureKind fatal_kind = FailureKind::kHarness;  // from a fatal message
  std::string fatal_message;  // also set for protocol violations seen by the supervisor
  SupervisorClock::time_point last_activity;
  int last_op = -1;  // last op reported by a progress heartbeat in this case
  int started_index = -1;  // the latest case it said it began (op -1 heartbeat)
  // --sanitize: pid is compute-sanitizer's (the worker is its child, in the
  // process group pid leads); its log, and how many findings it gave so far.
  std::optional<SanitizerLog> sanitizer_log;
  int sanitizer_findings = 0;

  bool lost() const { return exit.has_value() || !channel || channel->eof(); }
};

// One allgather round: a key and its member list, until every member has spoken.
struct GatherRound {
  std::vector<int> members;
  std::map<int, std::string> data;  // rank -> hex payload
};

// Why a case could not finish, and what to say about each rank that did not report.
struct CaseFailure {
  std::string cause;         // the headline
  FailureKind kind;          // of the case, and of every rank left without a result
  int culprit = -1;          // the rank the cause is about, if one
  std::string culprit_note;  // its per-rank error
  bool hang = false;         // a rank stopped making progress
  // The rank failed after it began a case sent ahead, before it sent this
  // case's result (its last check runs beside the next case): the failure is
  // the later case's, and this one is left unjudged.
  bool in_later_case = false;
};

// A case sent to every worker before the one in progress finished, so that
// no worker idles between cases (stress): it becomes the case in progress
// when run_case is called for it, or is finished and discarded. Cases sent
// ahead run in the order they were sent.
struct SentAhead {
  Case scenario;
  std::string id;
  int index = -1;
  // Per rank: its result and last heartbeat, when they arrive before the
  // case is the one in progress.
  std::vector<std::optional<RankCaseResult>> results;
  std::vector<int> last_ops;
};

struct Session::Impl {
  explicit Impl(const SessionConfig& c) : config(c) {}
  ~Impl() { teardown(); }

  // supervisor.cpp
  void start();
  void teardown() noexcept;
  void poll_workers(int timeout_ms);
  void kill_workers() noexcept;
  std::vector<const WaitStatus*> status_entries() const;
  // The board's waits for case `c` (the current one): ranks that already sent
  // its result and began a case sent ahead are left out (their waits are that
  // case's).
  std::vector<std::string> diagnose_current_waits(const Case& c) const;
  bool in_kernel(int rank) const;
  // "; inside kernel 'k': rank 1 (init), rank 2" for the ranks without a result that
  // are inside a function of the kernel under test, or "".
  std::string inside_kernel_note() const;
  void drain_exited_workers();  // the rank's worker is inside a kernel (plugin) function
  // --sanitize: the findings in the workers' logs since the last read
  // (final: everything left, after the workers exited, and a finding for a
  // worker whose sanitizer exited with kSanitizerErrorExitCode having
  // printed nothing dcp-check read). Never throws.
  std::vector<SanitizerFinding> read_sanitizer_logs(bool final) noexcept;
  // Start-up deadline: kStartupTimeoutS, longer under the sanitizer.
  double startup_timeout_s() const;
  // Signals a worker (its whole process group under the sanitizer).
  void signal_worker(const WorkerState& w, int sig) const noexcept;
  // Found by read_sanitizer_logs(true) at teardown (Session::late_findings).
  std::vector<SanitizerFinding> late_findings;

  // supervisor_launches.cpp: what the workers' launch observers saw.
  // Asks every observing worker for a snapshot (completions, CONTROL dumps)
  // and waits for the answers, 1.5 s at most in all.
  std::vector<RankLaunches> launch_snapshots();
  // New residency warnings from the ranks' tables into env (one per text,
  // with the ranks that saw it), and env.launch_observation.
  void collect_launch_notes();
  std::vector<std::pair<std::string, std::vector<int>>> residency_seen;
  std::vector<uint32_t> warnings_read;  // per rank: how many of its table's were read

  // supervisor_case.cpp
  CaseResult run_case(const Case& c, const std::string& suite, const std::vector<Case>& upcoming);
  // Finishes the cases sent ahead up to `keep` (all when it is null or not
  // among them), discarding their verdicts; an error there kills the session
  // like any case's.
  void drain_sent_ahead(const Case* keep);
  // supervisor_bench.cpp: one bench point on every rank; fills (*rank_us)[rank][repeat].
  CaseResult run_bench_point(const Case& c, ::dcp::Impl impl, const BenchSpec& spec,
                             std::vector<std::vector<double>>* rank_us);

  SessionConfig config;
  EnvironmentInfo env;
  RunTarget target;  // from config and env once both are known (start)
  std::vector<int> dcp_sizes;
  std::string run_id;
  std::string run_dir;
  std::string socket_path;
  std::optional<InterruptHandlers> signals;
  std::optional<StatusBoard> board;
  std::unique_ptr<UnixListener> listener;
  std::unique_ptr<MpsController> mps;
  std::vector<WorkerState> workers;
  std::vector<SocketChannel> pending;  // accepted, no hello yet
  std::map<std::string, GatherRound> gathers;
  bool dead = false;
  std::string dead_reason;
  int next_case_index = 0;
  int current_case_index = -1;
  std::deque<SentAhead> ahead;  // in the order sent
  bool torn_down = false;
  ShutdownTimes shutdown_times;

 private:
  void make_run_dir();
  void detect_gpus();
  void spawn_workers();
  void await_connections(SupervisorClock::time_point deadline);
  void await_ready(SupervisorClock::time_point deadline);
  void check_startup_failures() const;
  void accept_pending();
  void read_worker(WorkerState& w);
  void read_pending(size_t idx);
  void handle_message(WorkerState& w, const nlohmann::json& msg);
  void relay_gather(WorkerState& w, const nlohmann::json& msg);
  void unlink_shared_memory() noexcept;
  std::string skip_reason(const Case& c) const;  // "" when the case can run
  void send_case(const std::string& id, int index);
  void make_current(int index);
  void send_ahead(const std::vector<Case>& upcoming);
  SentAhead* sent_ahead(int index);
  CaseResult await_case(CaseResult r, const Case& c);
  CaseResult finish_case(CaseResult r, const Case& c);
  CaseResult finish_failed_case(CaseResult r, const Case& c, const CaseFailure& f);
  std::optional<CaseFailure> find_failure(const Case& c,
                                          std::optional<SupervisorClock::time_point>& first_error);
};

// The extra seconds a rank may go without a heartbeat past --timeout before the
// supervisor declares it stuck (the worker's own spin bound fires first).
inline constexpr double kStartupTimeoutS = 120;
inline constexpr double kShutdownWaitS = 5;
inline constexpr double kKillGraceS = 0.5;
// After one rank reports an error, how long the others get to report theirs.
inline constexpr double kErrorGraceS = 1.5;

}  // namespace dcp
