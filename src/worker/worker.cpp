#include "worker.h"

#include <fmt/format.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <deque>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include "case_dump.h"
#include "case_runner.h"
#include "errors.h"
#include "exit_code.h"
#include "gpu_backend.h"
#include "group_barrier.h"
#include "host_backend.h"
#include "impl_agreement.h"
#include "socket_channel.h"
#include "socket_rendezvous.h"
#include "launch_observer.h"
#include "status_board.h"
#include "worker_bench.h"
#include "worker_protocol.h"

namespace dcp {
namespace {

struct WorkerArgs {
  std::string socket_path;
  int rank = -1;
  int world = 0;
  std::string run_id;
};

WorkerArgs parse_worker_args(int argc, char** argv) {
  WorkerArgs args;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--socket") {
      args.socket_path = value;
    } else if (flag == "--rank") {
      args.rank = std::stoi(value);
    } else if (flag == "--world") {
      args.world = std::stoi(value);
    } else if (flag == "--run-id") {
      args.run_id = value;
    } else {
      DCP_THROW(HarnessError, "__worker: unknown argument {}", flag);
    }
  }
  DCP_CHECK(
      !args.socket_path.empty() && args.rank >= 0 && args.world > args.rank && !args.run_id.empty(),
      HarnessError, "__worker is internal: started only by dcp-check itself");
  return args;
}

// One rank's backends, one per DCP group size, and everything they need.
class Worker {
 public:
  Worker(const WorkerArgs& args, SocketChannel& channel)
      : args_(args), channel_(channel), supervisor_pid_(getppid()) {}
  ~Worker() { join_finisher(); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  void run();

 private:
  nlohmann::json wait_for_message();
  void build_backends();
  // The backend for a case: one per (dcp size, workspace shape). Suites may mix
  // geometries (the upstream cases use Kimi-K3 whatever --geometry says), so a
  // shape not seen before gets its workspace here; every rank of the group sees
  // the same case at the same point, so their rendezvous line up.
  // `kernel` is a kernel spec: the session's kernel, its --against, or (bench) "stock".
  std::pair<const BackendConfig*, RankBackend*> backend_for(const Case& c,
                                                            const std::string& kernel);
  BackendConfig make_backend_config(int dcp_size, const Geometry& geometry,
                                    const std::string& kernel);
  std::shared_ptr<const LoadedKernel> loaded(const std::string& kernel);
  std::vector<std::string> kernels() const;  // the session's kernel, then its --against
  void run_one_case(const nlohmann::json& msg);
  // Barriers and begin_case, then a RankCaseRun (their time counted as its
  // barrier phase); on a set-up failure `run` stays null and the error result
  // is returned.
  RankCaseResult prepare_case(const Case& c, int case_index, const std::string& pass,
                              const std::string& kernel, std::vector<KeptCall>* outputs,
                              std::unique_ptr<RankCaseRun>& run);
  RankCaseResult run_case_once(const Case& c, int case_index, const std::string& pass,
                               const std::string& kernel,
                               std::vector<KeptCall>* outputs = nullptr);
  // The overlap across cases: whether the supervisor already sent the next
  // case (it is then kept in early_), so this case's last check can finish on
  // the finisher thread while the next case runs.
  bool next_case_waiting();
  void group_barrier(const std::string& key, const BackendConfig& bc);
  void send_result(int index, const RankCaseResult& result);
  void join_finisher();
  nlohmann::json run_bench(const nlohmann::json& request);  // worker_bench.h
  RankCaseResult run_case_all_impls(const Case& c, int case_index, const std::string& pass);
  void dump_case(const Case& c, const std::string& kernel, const std::vector<KeptCall>& calls,
                 RankCaseResult& result);

  WorkerArgs args_;
  SocketChannel& channel_;
  pid_t supervisor_pid_;
  WorkerConfig config_;
  std::unique_ptr<StatusBoard> board_;
  std::unique_ptr<SocketRendezvous> rendezvous_;
  struct Built {
    BackendConfig config;
    std::unique_ptr<RankBackend> backend;
  };
  std::map<std::string, Built> backends_;                               // key: workspace_key()
  std::map<std::string, std::shared_ptr<const LoadedKernel>> kernels_;  // by spec
  std::deque<nlohmann::json> early_;  // messages read ahead (next_case_waiting, the rendezvous)
  // Finishes the previous case (its last check, then its result message). It
  // is joined before this rank sends another result, so results go out in order.
  std::thread finisher_;
  double idle_ms_ = 0;  // PhaseTimes::idle_ms of the next case, so far
  double cpu_ms_ = 0;   // PhaseTimes::cpu_ms of the next case
  double cpu_mark_ms_ = process_cpu_ms();
  double main_cpu_ms_ = 0;  // PhaseTimes::main_cpu_ms (the loop runs on the main thread)
  double main_cpu_mark_ms_ = thread_cpu_ms();
};

// Waits as long as it takes between cases (the command decides the pace), but
// never outlives the supervisor (PR_SET_PDEATHSIG also covers that).
nlohmann::json Worker::wait_for_message() {
  if (!early_.empty()) {
    nlohmann::json msg = std::move(early_.front());
    early_.pop_front();
    return msg;
  }
  while (true) {
    if (auto msg = channel_.receive(1.0)) return *msg;
    DCP_CHECK(getppid() == supervisor_pid_, HarnessError, "rank {}: the supervisor is gone",
              args_.rank);
  }
}

std::string workspace_key(int dcp_size, const Geometry& g, const std::string& kernel) {
  return fmt::format("dcp{}-h{}-d{}-m{}-{}", dcp_size, g.heads_per_rank, g.head_dim, g.max_tokens,
                     kernel);
}

// Adds `more` (another pass over the same case) into `into`.
void merge_results(RankCaseResult& into, const RankCaseResult& more) {
  into.num_checked += more.num_checked;
  into.num_mismatches += more.num_mismatches;
  into.num_nan += more.num_nan;
  for (const Mismatch& m : more.first_mismatches) {
    if (into.first_mismatches.size() < 8) into.first_mismatches.push_back(m);
  }
  into.passed = into.passed && more.passed;
  into.elapsed_ms += more.elapsed_ms;
  into.phases += more.phases;
  into.check += more.check;
  into.output_hash = fnv1a(
      into.output_hash, std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(&more.output_hash),
                                             reinterpret_cast<const uint8_t*>(&more.output_hash) +
                                                 sizeof(more.output_hash)));
  if (into.error.empty() && !more.error.empty()) {
    into.error = more.error;
    into.failure = more.failure;
  } else if (into.error.empty()) {
    into.failure = check_failure(into.num_mismatches, into.num_nan, into.passed);
  }
}

std::vector<std::string> Worker::kernels() const {
  std::vector<std::string> out;
  for (const KernelInfo* k : config_.session.kernels()) out.push_back(k->spec);
  return out;
}

// Plugins are opened by their absolute path (the supervisor validated them);
// built-ins by name.
std::shared_ptr<const LoadedKernel> Worker::loaded(const std::string& kernel) {
  auto it = kernels_.find(kernel);
  if (it != kernels_.end()) return it->second;
  std::string open = kernel;
  for (const KernelInfo* k : config_.session.kernels()) {
    if (k->spec == kernel && !k->builtin) open = k->path;
  }
  return kernels_.emplace(kernel, load_kernel(open)).first->second;
}

BackendConfig Worker::make_backend_config(int dcp_size, const Geometry& geometry,
                                          const std::string& kernel) {
  const SessionConfig& s = config_.session;
  BackendConfig bc;
  bc.global_rank = args_.rank;
  bc.dcp_size = dcp_size;
  bc.group_idx = args_.rank / dcp_size;
  bc.group_rank = args_.rank % dcp_size;
  for (int i = 0; i < dcp_size; ++i) bc.members.push_back(bc.group_idx * dcp_size + i);
  bc.geometry = geometry;
  bc.kernel = loaded(kernel);
  // Mutants belong to the kernel under test only (an --against kernel runs as shipped).
  bc.mutant = kernel == s.kernel.spec ? s.mutant : 0;
  bc.spin_timeout_s = effective_timeout_s(s);  // scaled under compute-sanitizer
  bc.device = config_.device;
  bc.status = board_->entry(args_.rank);
  bc.in_kernel = board_->in_kernel(args_.rank);
  bc.run_id = config_.run_id;
  bc.exact_buffers = !s.sanitize_tool.empty();
  return bc;
}

std::pair<const BackendConfig*, RankBackend*> Worker::backend_for(const Case& c,
                                                                  const std::string& kernel) {
  const std::string key = workspace_key(c.dcp_size, c.geometry, kernel);
  auto it = backends_.find(key);
  if (it == backends_.end()) {
    Built built;
    built.config = make_backend_config(c.dcp_size, c.geometry, kernel);
    built.backend = config_.session.backend == BackendKind::kGpu
                        ? make_gpu_backend(built.config, *rendezvous_)
                    : built.config.kernel->info().memory == DCP_MEMORY_HOST
                        ? make_host_plugin_backend(built.config, *rendezvous_)
                        : make_host_backend(built.config, *rendezvous_);
    it = backends_.emplace(key, std::move(built)).first;
  }
  return {&it->second.config, it->second.backend.get()};
}

// The session geometry's workspaces are built at start-up, so a workspace that
// cannot be built fails the session before any case runs.
void Worker::build_backends() {
  for (int g : config_.dcp_sizes) {
    Case probe;
    probe.dcp_size = g;
    probe.geometry = config_.session.geometry;
    for (const std::string& kernel : kernels()) {
      // Cases of a group size the kernel does not support are skipped by the
      // supervisor: no workspace for them.
      if (g <= loaded(kernel)->info().max_group_size) backend_for(probe, kernel);
    }
  }
}

// --against: the second kernel runs the same case after the first, on its
// own workspace; both are checked against the reference, the result sums
// them, and the two are compared with each other (impl_agreement.h).
RankCaseResult Worker::run_case_all_impls(const Case& c, int case_index, const std::string& pass) {
  const std::vector<std::string> all = kernels();
  const bool dump = !config_.session.dump_dir.empty();
  if (all.size() == 1 && !dump) return run_case_once(c, case_index, pass, all.front());
  std::vector<KeptCall> first_out, second_out;
  RankCaseResult result = run_case_once(c, case_index, pass, all[0], &first_out);
  if (dump) dump_case(c, all[0], first_out, result);
  if (all.size() == 1 || !result.error.empty()) return result;
  const RankCaseResult second =
      run_case_once(c, case_index, pass + "-against", all[1], &second_out);
  merge_results(result, second);
  if (second.error.empty()) {
    const SessionConfig& session = config_.session;
    AgreementSpec spec;
    spec.exact = session.against_exact;
    spec.upstream = session.profile.upstream;
    spec.kernel = session.kernel.name;
    spec.against = session.against->name;
    spec.group_idx = args_.rank / c.dcp_size;
    spec.group_rank = args_.rank % c.dcp_size;
    spec.global_rank = args_.rank;
    check_impls_agree(c, first_out, second_out, spec, result);
    result.failure = check_failure(result.num_mismatches, result.num_nan, result.passed);
  }
  return result;
}

// replay --dump: this rank's tensors of the kernel under test (the calls it
// ran, a failed case's too). A dump that cannot be written is the harness's
// failure, never hiding the kernel's own verdict.
void Worker::dump_case(const Case& c, const std::string& kernel, const std::vector<KeptCall>& calls,
                       RankCaseResult& result) {
  try {
    auto [bc, backend] = backend_for(c, kernel);
    dump_rank_case(config_.session.dump_dir, c, *bc, calls, config_.session.profile);
  } catch (const std::exception& e) {
    result.error += fmt::format("{}dump to {} failed: {}", result.error.empty() ? "" : "; ",
                                config_.session.dump_dir, e.what());
    result.failure = headline(result.failure, FailureKind::kHarness);
    result.passed = false;
  }
}

RankCaseResult Worker::prepare_case(const Case& c, int case_index, const std::string& pass,
                                    const std::string& kernel,
                                    std::vector<KeptCall>* outputs,
                                    std::unique_ptr<RankCaseRun>& run) {
  const std::string key =
      fmt::format("case{}{}-g{}x{}", case_index, pass, c.dcp_size, args_.rank / c.dcp_size);
  CaseRunContext ctx;
  ctx.profile = config_.session.profile;
  ctx.profile.num_threads = checker_threads(args_.world);  // every rank of the run shares this host
  ctx.fault = config_.session.fault;
  ctx.case_index = case_index;
  ctx.outputs = outputs;
  // By value: the last heartbeats may come from the finisher thread.
  ctx.progress = [this, case_index](int op) {
    channel_.send({{"type", "progress"}, {"index", case_index}, {"op", op}});
  };
  PhaseClock barriers;
  try {
    auto [bc, backend] = backend_for(c, kernel);
    ctx.backend_config = bc;
    // The workspace is quiescent between the two barriers: begin_case may reset
    // it. A local begin_case needs only the second (backend.h).
    if (!backend->begin_case_is_local(c)) group_barrier(key + "-begin", *bc);
    backend->begin_case(c);
    group_barrier(key + "-go", *bc);
    double barrier_ms = 0;
    barriers.lap(barrier_ms);
    run = std::make_unique<RankCaseRun>(c, *backend, ctx);
    run->add_phase_ms(&PhaseTimes::barrier_ms, barrier_ms);
    run->add_phase_ms(&PhaseTimes::idle_ms, std::exchange(idle_ms_, 0.0));
    run->add_phase_ms(&PhaseTimes::cpu_ms, std::exchange(cpu_ms_, 0.0));
    run->add_phase_ms(&PhaseTimes::main_cpu_ms, std::exchange(main_cpu_ms_, 0.0));
    return {};
  } catch (const std::exception& e) {
    RankCaseResult r;
    r.case_id = format_case_id(c);
    r.rank = args_.rank;
    r.error = e.what();
    r.failure = failure_kind_of(e);
    return r;
  }
}

RankCaseResult Worker::run_case_once(const Case& c, int case_index, const std::string& pass,
                                     const std::string& kernel,
                                     std::vector<KeptCall>* outputs) {
  std::unique_ptr<RankCaseRun> run;
  RankCaseResult error = prepare_case(c, case_index, pass, kernel, outputs, run);
  if (!run) return error;
  run->start();
  return run->finish();
}

// The group's barrier on the status board (group_barrier.h); while it waits
// the socket is read as the rendezvous reads it (a case sent ahead is kept, a
// shutdown ends the wait).
void Worker::group_barrier(const std::string& key, const BackendConfig& bc) {
  wait_group_barrier(*board_->barrier_slot(bc.dcp_size, bc.group_idx), bc.dcp_size, key,
                     config_.gather_timeout_s, [this] {
                       next_case_waiting();  // reads the socket into early_
                       if (std::any_of(early_.begin(), early_.end(), [](const nlohmann::json& m) {
                             return m.value("type", "") == "shutdown";
                           })) {
                         throw ShutdownRequested{};
                       }
                     });
}

bool Worker::next_case_waiting() {
  channel_.pump();
  while (auto msg = channel_.next()) early_.push_back(std::move(*msg));
  return std::any_of(early_.begin(), early_.end(),
                     [](const nlohmann::json& m) { return m.value("type", "") == "case"; });
}

void Worker::send_result(int index, const RankCaseResult& result) {
  channel_.send({{"type", "result"}, {"index", index}, {"result", result}});
}

void Worker::join_finisher() {
  if (finisher_.joinable()) finisher_.join();
}

void Worker::run_one_case(const nlohmann::json& msg) {
  // worker_ms is wall time whatever DCP_PHASE_CLOCK says (the finisher thread
  // may end it, and a CPU clock laps only on the thread that made it).
  const double handled_since = wall_ms();
  const int index = msg.at("index").get<int>();
  launch_observer::set_case(index);
  // "Began": should this rank die now, while the previous case's last check
  // still runs beside, the supervisor files the death under this case.
  channel_.send({{"type", "progress"}, {"index", index}, {"op", -1}});
  const std::string id = msg.at("id").get<std::string>();
  std::string parse_error;
  std::optional<Case> c = parse_case_id(id, &parse_error);
  RankCaseResult result;
  const auto& sizes = config_.dcp_sizes;
  if (!c || std::find(sizes.begin(), sizes.end(), c->dcp_size) == sizes.end()) {
    result.case_id = id;
    result.rank = args_.rank;
    result.error = c ? fmt::format("no backend for dcp size {} at world {}", c->dcp_size,
                                   config_.session.world)
                     : fmt::format("cannot parse case id: {}", parse_error);
    result.failure = FailureKind::kHarness;
  } else if (!config_.session.check_determinism && kernels().size() == 1 &&
             config_.session.dump_dir.empty()) {
    std::unique_ptr<RankCaseRun> run;
    result = prepare_case(*c, index, "", kernels().front(), nullptr, run);
    if (run) {
      run->start();
      PhaseClock joined;
      join_finisher();  // the previous case's result goes out before this one's
      double join_ms = 0;
      joined.lap(join_ms);
      run->add_phase_ms(&PhaseTimes::idle_ms, join_ms);
      if (run->check_pending() && next_case_waiting()) {
        finisher_ = std::thread([this, index, handled_since, run = std::move(run)]() mutable {
          RankCaseResult r = run->finish_beside_next();
          r.worker_ms += wall_ms() - handled_since;
          try {
            send_result(index, r);
          } catch (const std::exception&) {
            // The supervisor is gone: the main thread finds out on its next read.
          }
        });
        return;
      }
      result = run->finish();
    }
  } else {
    result = run_case_all_impls(*c, index, "");
    if (config_.session.check_determinism && result.error.empty()) {
      RankCaseResult again = run_case_all_impls(*c, index, "-again");
      if (!again.error.empty()) {
        result = again;
      } else if (again.output_hash != result.output_hash) {
        result.passed = false;
        result.failure = FailureKind::kNondeterministic;
        result.error = fmt::format(
            "rank {}: nondeterministic output: output hash {:016x}, then {:016x} on a rerun",
            args_.rank, result.output_hash, again.output_hash);
      }
    }
  }
  join_finisher();
  result.worker_ms += wall_ms() - handled_since;
  send_result(index, result);
}

void Worker::run() {
  auto msg = channel_.receive(60.0);
  DCP_CHECK(msg && msg->value("type", "") == "config", HarnessError,
            "rank {}: no config from the supervisor", args_.rank);
  config_ = worker_config_from_json(*msg);
  board_ = std::make_unique<StatusBoard>(StatusBoard::open(config_.run_id, args_.world));
  if (config_.session.backend == BackendKind::kGpu && config_.session.observe_launches) {
    // Before the backends make the CUDA context; off (with the reason in the
    // table) where CUPTI cannot work, never a failure.
    launch_observer::start(board_->launch_table(args_.rank), board_->in_kernel(args_.rank));
  } else {
    std::snprintf(board_->launch_table(args_.rank)->note,
                  sizeof board_->launch_table(args_.rank)->note, "launches not observed: %s",
                  config_.session.backend != BackendKind::kGpu
                      ? "the host backend launches no kernels"
                  : !config_.session.sanitize_tool.empty()
                      ? "--sanitize (CUPTI and compute-sanitizer cannot both attach to a process)"
                      : "--observe off");
  }
  rendezvous_ =
      std::make_unique<SocketRendezvous>(channel_, args_.rank, config_.gather_timeout_s, &early_);
  build_backends();
  channel_.send({{"type", "ready"}, {"rank", args_.rank}});
  while (true) {
    PhaseClock idle;
    nlohmann::json next = wait_for_message();
    idle.lap(idle_ms_);
    const double cpu_now = process_cpu_ms(), main_now = thread_cpu_ms();
    cpu_ms_ += cpu_now - std::exchange(cpu_mark_ms_, cpu_now);
    main_cpu_ms_ += main_now - std::exchange(main_cpu_mark_ms_, main_now);
    const std::string type = next.value("type", "");
    if (type != "case") join_finisher();
    if (type == "shutdown") {
      backends_.clear();  // their dump regions go before the observer
      launch_observer::stop();
      return;
    }
    if (type == "bench") {
      channel_.send(run_bench(next));
      continue;
    }
    DCP_CHECK(type == "case", HarnessError, "rank {}: unexpected message {:.200}", args_.rank,
              next.dump());
    run_one_case(next);
  }
}

nlohmann::json Worker::run_bench(const nlohmann::json& request) {
  WorkerBenchHooks hooks;
  hooks.rank = args_.rank;
  hooks.rendezvous = rendezvous_.get();
  hooks.context.profile = config_.session.profile;
  hooks.context.profile.num_threads = checker_threads(args_.world);
  const int index = request.value("index", -1);
  hooks.context.case_index = index;
  hooks.context.progress = [this, index](int op) {
    channel_.send({{"type", "progress"}, {"index", index}, {"op", op}});
  };
  hooks.backend_for = [this](const Case& c, const std::string& kernel) {
    return backend_for(c, kernel);
  };
  return run_bench_request(request, hooks);
}

}  // namespace

int worker_main(int argc, char** argv) {
  // Before any CUDA call. Lazy loading makes a kernel's first launch wait for
  // every kernel running in the context (a pressure kernel, the other slot's
  // spinning kernel): load every module when the context is made, unless the
  // user chose a mode.
  setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
  // Ctrl-C reaches the whole foreground process group; only the supervisor acts
  // on it (it tears the workers down itself). Dying with the supervisor is
  // requested before exec; asking again here is harmless.
  std::signal(SIGINT, SIG_IGN);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  WorkerArgs args;
  std::optional<SocketChannel> channel;
  try {
    args = parse_worker_args(argc, argv);
    channel.emplace(SocketChannel::connect(args.socket_path, 30.0));
    channel->send({{"type", "hello"}, {"rank", args.rank}, {"pid", static_cast<int>(getpid())}});
    Worker(args, *channel).run();
    return 0;
  } catch (const ShutdownRequested&) {
    return 0;
  } catch (const std::exception& e) {
    const FailureKind kind = failure_kind_of(e);
    const int code = exit_code(findings_of(e));
    if (channel && !channel->eof()) {
      try {
        channel->send({{"type", "fatal"},
                       {"rank", args.rank},
                       {"kind", to_string(kind)},
                       {"message", e.what()}},
                      2.0);
      } catch (const std::exception&) {
        // The supervisor is gone or stuck: the exit status still tells it.
      }
    } else {
      fmt::print(stderr, "dcp-check worker (rank {}): {}\n", args.rank, e.what());
    }
    return code;
  }
}

}  // namespace dcp
