// The supervisor: spawns one worker per rank, relays their rendezvous, and
// tears everything down on every path. Invariants:
// - every wait has a deadline (start-up, per-call heartbeat, shutdown);
// - every worker dies with the supervisor (PR_SET_PDEATHSIG) and is reaped;
// - every shared-memory name of the run is unlinked and the run directory
//   (socket, MPS pipes and logs) removed, whatever failed.
#include <dirent.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "errors.h"
#include "gpu_env.h"
#include "host_backend.h"
#include "memory_stress_config.h"
#include "suites.h"
#include "supervisor_impl.h"
#include "version.h"
#include "worker_protocol.h"

namespace dcp {
namespace {

using nlohmann::json;

uint32_t random_u32() {
  std::random_device rd;
  return rd();
}

std::string join_members(const std::vector<int>& members) {
  return fmt::format("{}", fmt::join(members, ","));
}

// The last non-blank line of a text file ("" when there is none).
std::string last_log_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" =\t\r") != std::string::npos) last = line;
  }
  return last.substr(0, 300);
}

}  // namespace

// ---- Session ---------------------------------------------------------------

Session::Session(const SessionConfig& config) : impl_(std::make_unique<Impl>(config)) {
  impl_->start();  // on a throw, ~Impl (a constructed member) tears down what exists
}

Session::~Session() = default;

CaseResult Session::run_case(const Case& c, const std::string& suite,
                             const std::vector<Case>& upcoming) {
  const auto start = SupervisorClock::now();
  CaseResult r = impl_->run_case(c, suite, upcoming);
  impl_->collect_launch_notes();
  if (!impl_->config.sanitize_tool.empty()) {
    std::vector<SanitizerFinding> found = impl_->read_sanitizer_logs(false);
    if (r.status != CaseStatus::kSkipped) {
      add_sanitizer_findings(r, found);
    } else {  // it never ran (a dead session): the last case that ran gets them
      impl_->late_findings.insert(impl_->late_findings.end(), found.begin(), found.end());
    }
  }
  r.wall_ms = std::chrono::duration<double, std::milli>(SupervisorClock::now() - start).count();
  return r;
}

void Session::drain_sent_ahead(const Case* keep) { impl_->drain_sent_ahead(keep); }

bool Session::dead() const { return impl_->dead; }
ShutdownTimes Session::shut_down() {
  impl_->teardown();
  return impl_->shutdown_times;
}
const std::vector<SanitizerFinding>& Session::late_findings() const { return impl_->late_findings; }
const EnvironmentInfo& Session::environment() const { return impl_->env; }
const SessionConfig& Session::config() const { return impl_->config; }
const RunTarget& Session::target() const { return impl_->target; }

// ---- start-up --------------------------------------------------------------

void Session::Impl::start() {
  const auto started = SupervisorClock::now();
  signals.emplace();
  dcp_sizes = dcp_sizes_for_world(config.world);
  DCP_CHECK(!dcp_sizes.empty(), UsageError, "--world {}: no DCP group size divides it",
            config.world);
  env.backend = config.backend == BackendKind::kHost ? "host" : "gpu";
  env.dcp_version = DCP_VERSION;
  env.git_revision = DCP_GIT_REVISION;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  env.hostname = host;
  detect_gpus();
  for (const KernelInfo* k : config.kernels()) {
    const std::string why =
        session_refusal(*k, config.backend == BackendKind::kHost, env.ranks_share_gpu);
    if (!why.empty()) throw UsageError(why);
  }
  make_run_dir();
  board.emplace(StatusBoard::create(run_id, config.world));
  listener = std::make_unique<UnixListener>(socket_path);
  const int num_gpus = static_cast<int>(env.gpus.size());
  mps = std::make_unique<MpsController>(config.mps, config.backend == BackendKind::kGpu,
                                        config.world, num_gpus, run_dir);
  env.mps_mode = mps->description();
  if (config.backend == BackendKind::kGpu && !env.gpus.empty()) {
    env.memory_stress =
        memory_stress_for(env.gpus[0].name, memory_stress_cache_path()).description;
  }
  target = run_target(config, env);
  spawn_workers();
  const auto deadline =
      SupervisorClock::now() + std::chrono::seconds(static_cast<int64_t>(startup_timeout_s()));
  await_connections(deadline);
  for (WorkerState& w : workers) {
    WorkerConfig wc;
    wc.session = config;
    wc.run_id = run_id;
    wc.device = env.rank_gpu.empty() ? 0 : env.rank_gpu[w.rank];
    wc.dcp_sizes = dcp_sizes;
    wc.gather_timeout_s = std::max(120.0, 4 * effective_timeout_s(config) + 30);
    try {
      w.channel->send(worker_config_to_json(wc));
    } catch (const std::exception&) {
      w.channel->close();  // died since it connected: await_ready reports how
    }
  }
  await_ready(deadline);
  collect_launch_notes();  // what observes the launches, from the start
  env.startup_s = std::chrono::duration<double>(SupervisorClock::now() - started).count();
  // Every worker has connected and mapped the board: drop both names (and the
  // run directory unless MPS lives in it), so even a SIGKILLed supervisor
  // leaves nothing behind; its workers die with it (PR_SET_PDEATHSIG).
  listener.reset();
  board->unlink_name();
  std::error_code ec;
  std::filesystem::remove(run_dir, ec);  // only if empty: a private MPS daemon still uses it
}

void Session::Impl::detect_gpus() {
  if (config.backend == BackendKind::kHost) return;
  std::string reason;
  const int num_gpus = count_gpus(&reason);
  if (num_gpus <= 0) {
    throw UsageError(fmt::format(
        "no CUDA GPU is visible ({}): run on a GPU machine, or use --backend host for the CPU "
        "model of the protocol",
        reason.empty() ? "no device found" : reason));
  }
  fill_gpu_environment(&env);
  if (static_cast<int>(env.gpus.size()) != num_gpus) {
    env.gpus.resize(num_gpus);
    for (int i = 0; i < num_gpus; ++i) env.gpus[i].index = i;
  }
  for (int r = 0; r < config.world; ++r) env.rank_gpu.push_back(r % num_gpus);
  env.ranks_share_gpu = config.world > num_gpus;
}

void Session::Impl::make_run_dir() {
  const pid_t pid = getpid();
  run_id = fmt::format("{}-{:08x}", pid, random_u32());
  const char* tmpdir = std::getenv("TMPDIR");
  std::vector<std::string> bases;
  if (tmpdir != nullptr && *tmpdir != '\0') bases.emplace_back(tmpdir);
  bases.emplace_back("/tmp");
  for (const std::string& base : bases) {
    for (int attempt = 0; attempt < 8; ++attempt) {
      std::string dir = fmt::format("{}/dcp-check.{}.{:08x}", base, pid, random_u32());
      // A Unix socket path must fit in sun_path (108 bytes): a deep $TMPDIR falls back to /tmp.
      if (dir.size() + 5 >= 100) break;
      if (mkdir(dir.c_str(), 0700) == 0) {
        run_dir = dir;
        socket_path = dir + "/sock";
        return;
      }
      if (errno != EEXIST) break;
    }
  }
  DCP_THROW(HarnessError, "cannot create a run directory under {} or /tmp: {}",
            tmpdir != nullptr ? tmpdir : "$TMPDIR", std::strerror(errno));
}

void Session::Impl::spawn_workers() {
  const std::vector<std::string> worker_env =
      make_environment(mps->worker_env(), mps->worker_unset());
  SpawnOptions opts;
  opts.die_with_parent = true;
  opts.ignore_sigint = true;
  const bool sanitized = !config.sanitize_tool.empty();
  // Under the sanitizer the worker is its child: one process group for both,
  // so a hang or teardown signals the pair. The sanitizer must be given this
  // program by its real path (its own /proc/self/exe is itself).
  opts.own_process_group = sanitized;
  std::error_code ec;
  const std::string self = sanitized ? std::filesystem::read_symlink("/proc/self/exe", ec).string()
                                     : std::string("/proc/self/exe");
  DCP_CHECK(!ec, HarnessError, "cannot resolve /proc/self/exe: {}", ec.message());
  workers.resize(config.world);
  for (int r = 0; r < config.world; ++r) {
    WorkerState& w = workers[r];
    w.rank = r;
    w.last_activity = SupervisorClock::now();
    std::vector<std::string> argv = {"dcp-check", "__worker",
                                     "--socket",  socket_path,
                                     "--rank",    std::to_string(r),
                                     "--world",   std::to_string(config.world),
                                     "--run-id",  run_id};
    if (!sanitized) {
      w.pid = spawn_process("/proc/self/exe", argv, worker_env, opts);
      continue;
    }
    // The log lives in the run directory (kept until teardown has read it).
    const std::string log = fmt::format("{}/sanitizer-rank{}.log", run_dir, r);
    w.sanitizer_log.emplace(log, config.sanitize_tool, r);
    std::vector<std::string> wrapped =
        sanitizer_argv_prefix(config.sanitizer_path, config.sanitize_tool, log);
    wrapped.push_back(self);
    wrapped.insert(wrapped.end(), argv.begin() + 1, argv.end());
    w.pid = spawn_process(config.sanitizer_path, wrapped, worker_env, opts);
  }
}

double Session::Impl::startup_timeout_s() const {
  // Instrumenting every module at start-up is slow (minutes for large fatbins).
  return config.sanitize_tool.empty() ? kStartupTimeoutS : kStartupTimeoutS * 5;
}

void Session::Impl::signal_worker(const WorkerState& w, int sig) const noexcept {
  if (w.pid <= 0) return;
  if (w.sanitizer_log) kill(-w.pid, sig);  // the sanitizer and its worker
  kill(w.pid, sig);
}

std::vector<SanitizerFinding> Session::Impl::read_sanitizer_logs(bool final) noexcept {
  std::vector<SanitizerFinding> out;
  for (WorkerState& w : workers) {
    if (!w.sanitizer_log) continue;
    try {
      std::vector<SanitizerFinding> found = w.sanitizer_log->read_new(final);
      w.sanitizer_findings += static_cast<int>(found.size());
      out.insert(out.end(), found.begin(), found.end());
      if (final && w.sanitizer_findings == 0 && w.exit && !w.exit->signaled &&
          w.exit->code == kSanitizerErrorExitCode) {
        SanitizerFinding f;
        f.tool = config.sanitize_tool;
        f.rank = w.rank;
        f.kind = fmt::format(
            "compute-sanitizer exited with status {} (it found errors) but its "
            "log {} holds no report dcp-check could read",
            kSanitizerErrorExitCode, w.sanitizer_log->path());
        ++w.sanitizer_findings;
        out.push_back(std::move(f));
      }
    } catch (const std::exception& e) {
      SanitizerFinding f;
      f.tool = config.sanitize_tool;
      f.rank = w.rank;
      f.kind = fmt::format("cannot read the sanitizer's log: {}", e.what());
      out.push_back(std::move(f));
    }
  }
  return out;
}

// A worker that dies or reports a fatal error during start-up ends the session
// with the error class it reported (a missing GPU or driver is a usage error).
void Session::Impl::check_startup_failures() const {
  if (interrupted()) {
    DCP_THROW(HarnessError, "interrupted by {} during start-up", signal_name(interrupt_signal()));
  }
  // A rank that died inside the kernel under test is the cause; its peers'
  // failed exchanges are consequences.
  for (const WorkerState& w : workers) {
    if (w.exit && in_kernel(w.rank)) {
      throw KernelFault(fmt::format("rank {} (pid {}) {} inside kernel '{}' during start-up",
                                    w.rank, w.pid, w.exit->describe(), config.kernel.name),
                        FailureKind::kCrash);
    }
  }
  // The first fatal report, preferring the kernel's and usage ones over
  // harness ones (a peer's failure shows up on the others as a harness error).
  const std::function<bool(FailureKind)> preferred[] = {
      [](FailureKind k) { return k == FailureKind::kUsage; },
      [](FailureKind k) { return is_kernel_failure(k); }, [](FailureKind) { return true; }};
  for (const auto& prefer : preferred) {
    for (const WorkerState& w : workers) {
      if (w.fatal_message.empty() || !prefer(w.fatal_kind)) continue;
      const std::string msg =
          fmt::format("rank {} failed during start-up: {}", w.rank, w.fatal_message);
      if (w.fatal_kind == FailureKind::kUsage) throw UsageError(msg);
      if (is_kernel_failure(w.fatal_kind)) throw KernelFault(msg, w.fatal_kind);
      throw HarnessError(msg);
    }
  }
  for (const WorkerState& w : workers) {
    if (w.exit) {
      // Under --sanitize the child is compute-sanitizer: its log says why it stopped.
      const std::string tail = w.sanitizer_log ? last_log_line(w.sanitizer_log->path()) : "";
      DCP_THROW(HarnessError, "rank {} (pid {}) {} during start-up{}", w.rank, w.pid,
                w.exit->describe(),
                tail.empty() ? "" : fmt::format("; compute-sanitizer's log ends: {}", tail));
    }
    if (w.channel && w.channel->eof()) {
      DCP_THROW(HarnessError, "rank {} (pid {}) closed its connection during start-up", w.rank,
                w.pid);
    }
  }
}

void Session::Impl::await_connections(SupervisorClock::time_point deadline) {
  auto all_connected = [&] {
    return std::all_of(workers.begin(), workers.end(),
                       [](const WorkerState& w) { return w.channel.has_value(); });
  };
  while (!all_connected()) {
    poll_workers(50);
    check_startup_failures();
    DCP_CHECK(SupervisorClock::now() < deadline, HarnessError,
              "workers did not connect within {} s", startup_timeout_s());
  }
  pending.clear();
}

void Session::Impl::await_ready(SupervisorClock::time_point deadline) {
  auto all_ready = [&] {
    return std::all_of(workers.begin(), workers.end(),
                       [](const WorkerState& w) { return w.ready; });
  };
  while (!all_ready()) {
    poll_workers(50);
    drain_exited_workers();
    check_startup_failures();
    if (SupervisorClock::now() >= deadline) {
      std::vector<int> slow;
      for (const WorkerState& w : workers) {
        if (!w.ready) slow.push_back(w.rank);
      }
      DCP_THROW(HarnessError, "ranks {} did not build their workspaces within {} s",
                join_members(slow), startup_timeout_s());
    }
  }
}

// ---- event loop ------------------------------------------------------------

void Session::Impl::poll_workers(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<int> owner;  // >= 0: worker rank; -1: listener; <= -2: pending index -(i + 2)
  if (listener) {
    fds.push_back({listener->fd(), POLLIN, 0});
    owner.push_back(-1);
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    fds.push_back({pending[i].fd(), POLLIN, 0});
    owner.push_back(-static_cast<int>(i) - 2);
  }
  for (WorkerState& w : workers) {
    if (w.channel && !w.channel->eof()) {
      fds.push_back({w.channel->fd(), POLLIN, 0});
      owner.push_back(w.rank);
    }
  }
  if (poll(fds.data(), fds.size(), timeout_ms) > 0) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      if (owner[i] == -1) {
        accept_pending();
      } else if (owner[i] <= -2) {
        read_pending(static_cast<size_t>(-owner[i] - 2));
      } else {
        read_worker(workers[owner[i]]);
      }
    }
    // Pending connections that said hello (or hung up) were moved out.
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [](const SocketChannel& ch) { return ch.fd() < 0; }),
                  pending.end());
  }
  for (WorkerState& w : workers) {
    if (w.pid > 0 && !w.exit) {
      if (auto info = try_reap(w.pid)) w.exit = info;
    }
  }
}

// A worker that exited may still have its last report (a fatal message) unread
// in the socket: read until its end of stream, for at most a second, so the
// verdict rests on what it said rather than on how it exited.
void Session::Impl::drain_exited_workers() {
  const auto until = SupervisorClock::now() + std::chrono::seconds(1);
  auto undrained = [&] {
    return std::any_of(workers.begin(), workers.end(), [](const WorkerState& w) {
      return w.exit && w.channel && !w.channel->eof();
    });
  };
  while (undrained() && SupervisorClock::now() < until) poll_workers(20);
}

void Session::Impl::accept_pending() {
  while (auto ch = listener->accept_now()) pending.push_back(std::move(*ch));
}

void Session::Impl::read_pending(size_t idx) {
  SocketChannel& ch = pending[idx];
  const bool open = ch.pump();
  if (auto msg = ch.next()) {
    const int rank = msg->value("rank", -1);
    if (msg->value("type", "") != "hello" || rank < 0 || rank >= config.world ||
        workers[rank].channel) {
      ch.close();  // not one of ours, or a duplicate: drop it
      return;
    }
    WorkerState& w = workers[rank];
    w.channel.emplace(std::move(ch));  // leaves `ch` with fd -1: erased by the caller
    w.last_activity = SupervisorClock::now();
    read_worker(w);  // anything sent right after hello
    return;
  }
  if (!open) ch.close();
}

void Session::Impl::read_worker(WorkerState& w) {
  w.channel->pump();
  try {
    while (auto msg = w.channel->next()) handle_message(w, *msg);
  } catch (const std::exception& e) {
    w.fatal_kind = FailureKind::kHarness;
    w.fatal_message = fmt::format("protocol error: {}", e.what());
  }
}

void Session::Impl::handle_message(WorkerState& w, const json& msg) {
  w.last_activity = SupervisorClock::now();
  const std::string type = msg.value("type", "");
  if (type == "gather") {
    relay_gather(w, msg);
  } else if (type == "progress") {
    const int index = msg.value("index", -1);
    w.started_index = std::max(w.started_index, index);
    if (index == current_case_index) w.last_op = msg.value("op", -1);
    if (SentAhead* a = sent_ahead(index)) a->last_ops[w.rank] = msg.value("op", -1);
  } else if (type == "result") {
    const int index = msg.value("index", -1);
    if (index == current_case_index) {
      w.result = msg.at("result").get<RankCaseResult>();
      if (msg.contains("bench")) w.bench = msg.at("bench");
    } else if (SentAhead* a = sent_ahead(index)) {
      a->results[w.rank] = msg.at("result").get<RankCaseResult>();
    }
  } else if (type == "fatal") {
    w.fatal_kind = failure_kind_from_string(msg.value("kind", "")).value_or(FailureKind::kHarness);
    w.fatal_message = msg.value("message", "(no message)");
  } else if (type == "ready") {
    w.ready = true;
  } else if (type != "hello") {
    w.fatal_kind = FailureKind::kHarness;
    w.fatal_message = fmt::format("unexpected message type '{}'", type);
  }
}

void Session::Impl::relay_gather(WorkerState& w, const json& msg) {
  const std::string key = msg.at("key").get<std::string>();
  const auto members = msg.at("members").get<std::vector<int>>();
  const bool valid = !members.empty() && std::is_sorted(members.begin(), members.end()) &&
                     std::adjacent_find(members.begin(), members.end()) == members.end() &&
                     members.front() >= 0 && members.back() < config.world &&
                     std::binary_search(members.begin(), members.end(), w.rank);
  DCP_CHECK(valid, HarnessError, "rank {}: bad member list [{}] for rendezvous '{}'", w.rank,
            join_members(members), key);
  GatherRound& round = gathers[key + "|" + join_members(members)];
  round.members = members;
  DCP_CHECK(round.data.emplace(w.rank, msg.at("data").get<std::string>()).second, HarnessError,
            "rank {} joined rendezvous '{}' twice", w.rank, key);
  if (round.data.size() < members.size()) return;
  json data = json::array();
  for (int m : members) data.push_back(round.data.at(m));
  const json reply = {{"type", "gathered"}, {"key", key}, {"data", data}};
  gathers.erase(key + "|" + join_members(members));
  for (int m : members) {
    WorkerState& peer = workers[m];
    if (peer.lost()) continue;  // its death is reported by the loop that waits on it
    try {
      peer.channel->send(reply, 2.0);
    } catch (const std::exception&) {
      peer.channel->close();  // seen as lost by the caller
    }
  }
}

// ---- teardown --------------------------------------------------------------

void Session::Impl::kill_workers() noexcept {
  for (WorkerState& w : workers) {
    if (w.pid > 0 && !w.exit) signal_worker(w, SIGTERM);
  }
  const auto term_deadline =
      SupervisorClock::now() + std::chrono::milliseconds(static_cast<int>(kKillGraceS * 1000));
  for (WorkerState& w : workers) {
    while (w.pid > 0 && !w.exit && SupervisorClock::now() < term_deadline) {
      if (auto info = try_reap(w.pid)) {
        w.exit = info;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
  for (WorkerState& w : workers) {
    if (w.pid > 0 && !w.exit) {
      signal_worker(w, SIGKILL);
      w.exit = wait_for_exit(w.pid, 5.0);
      if (!w.exit) w.exit = ExitInfo{true, SIGKILL};  // unkillable (D state): nothing more to do
    }
  }
}

bool Session::Impl::in_kernel(int rank) const { return board && *board->in_kernel(rank) != 0; }

std::string Session::Impl::inside_kernel_note() const {
  std::vector<std::string> inside;
  for (const WorkerState& w : workers) {
    const uint32_t mark = board && !w.result ? *board->in_kernel(w.rank) : kInKernelNone;
    if (mark == kInKernelNone) continue;
    const std::string function = in_kernel_function(mark);
    inside.push_back(function.empty() ? fmt::format("rank {}", w.rank)
                                      : fmt::format("rank {} ({})", w.rank, function));
  }
  if (inside.empty()) return "";
  return fmt::format("; inside kernel '{}': {}", config.kernel.name, fmt::join(inside, ", "));
}

std::vector<const WaitStatus*> Session::Impl::status_entries() const {
  std::vector<const WaitStatus*> entries;
  for (int r = 0; r < config.world; ++r) entries.push_back(board->entry(r));
  return entries;
}

std::vector<std::string> Session::Impl::diagnose_current_waits(const Case& c) const {
  std::vector<bool> moved_on;
  for (const WorkerState& w : workers) {
    moved_on.push_back(w.result.has_value() && w.started_index > current_case_index);
  }
  return diagnose_waits(status_entries(), c.dcp_size, config.kernel.has(DCP_CAP_LAUNCH_RECORD),
                        &moved_on);
}

void Session::Impl::unlink_shared_memory() noexcept {
  try {
    for (const std::string& name : host_segment_names(run_id, config.world))
      shm_unlink(name.c_str());
  } catch (const std::exception&) {
  }
  // Whatever else this run created under its prefix (a backend's own names).
  const std::string prefix = fmt::format("dcp-check-{}-", run_id);
  if (DIR* dir = opendir("/dev/shm")) {
    std::vector<std::string> names;
    while (dirent* e = readdir(dir)) {
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
        names.emplace_back(e->d_name);
    }
    closedir(dir);
    for (const std::string& n : names) shm_unlink(("/" + n).c_str());
  }
}

void Session::Impl::teardown() noexcept {
  if (torn_down) return;
  torn_down = true;
  const auto started = SupervisorClock::now();
  auto seconds_since = [](SupervisorClock::time_point t) {
    return std::chrono::duration<double>(SupervisorClock::now() - t).count();
  };
  for (WorkerState& w : workers) {
    if (w.pid > 0 && !w.exit && w.channel && !w.channel->eof()) {
      try {
        w.channel->send({{"type", "shutdown"}}, 0.2);
      } catch (const std::exception&) {
      }
    }
  }
  const auto deadline =
      SupervisorClock::now() + std::chrono::milliseconds(static_cast<int>(kShutdownWaitS * 1000));
  auto all_exited = [&] {
    bool all = true;
    for (WorkerState& w : workers) {
      if (w.pid > 0 && !w.exit) {
        if (auto info = try_reap(w.pid)) {
          w.exit = info;
        } else {
          all = false;
        }
      }
    }
    return all;
  };
  while (!all_exited() && SupervisorClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (const WorkerState& w : workers) {
    if (w.pid > 0 && !w.exit && !dead) ++shutdown_times.workers_killed;  // did not obey shutdown
  }
  kill_workers();
  // A worker still in the group (the sanitizer gone first) gets no grace.
  for (const WorkerState& w : workers) {
    if (w.sanitizer_log && w.pid > 0) kill(-w.pid, SIGKILL);
  }
  if (!config.sanitize_tool.empty()) {
    std::vector<SanitizerFinding> last = read_sanitizer_logs(/*final=*/true);
    late_findings.insert(late_findings.end(), last.begin(), last.end());
  }
  shutdown_times.workers_s = seconds_since(started);
  for (WorkerState& w : workers) w.channel.reset();
  pending.clear();
  listener.reset();  // unlinks the socket
  const auto mps_started = SupervisorClock::now();
  mps.reset();  // quits a private MPS daemon (after every client is gone)
  shutdown_times.mps_s = seconds_since(mps_started);
  const auto rest_started = SupervisorClock::now();
  if (!run_id.empty()) unlink_shared_memory();
  board.reset();  // unlinks the status board
  if (!run_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(run_dir, ec);
  }
  signals.reset();
  shutdown_times.rest_s = seconds_since(rest_started);
}

}  // namespace dcp
