// The GPU backend (see gpu_backend.h).
//
// Every call, whatever the mode, is the same sequence on one stream: one copy
// of the packed inputs in (from pinned staging), one preparation kernel
// (kernels/call_prep.h: partial_output written from its streams, the LSE and
// sequences put in their own buffers, the output poisoned with 0xFF bytes,
// NaN in fp16 and bf16, its guards filled), skew delay, the op (or a replay
// of the graph that captured it), copy the output out (a reuse case writes
// NaN over both inputs first, right after the op). With a slow producer
// (Case::producer) both inputs are poisoned instead and the producer kernel,
// the last thing before the op, writes them (under graphs it is captured
// with the op, its parameters copied in before each replay). Modes differ
// only in buffers and synchronisation:
//   eager      one buffer set, host sync after every call;
//   pipelined  one buffer set per call, one sync after the whole batch;
//   graph      one buffer set per graph: each slot caches up to
//              kGraphsPerSlot graphs by launch key (a graph set replays one
//              per token count, interleaved, over the same workspace and
//              slot); a new key captures into the least recently used one;
//              every case captures its own (begin_case drops them); one sync
//              after the batch.
// Ubatch slot s runs on stream[s], as DBO runs its ubatches, whichever kernel
// context (Case::num_contexts: two layers, each with its own workspace) the
// call goes to; graphs are cached per context and slot. The op itself is
// whatever kernel the plugin seam holds (built-in or a library): this file is
// the harness around it and never knows which.
#include "gpu_backend.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>

#include "alloc_churn.h"
#include "buffer_pool.h"
#include "call_prep.h"
#include "cuda_check.h"
#include "cuda_raii.h"
#include "device_check_launch.h"
#include "device_value_table.h"
#include "direct_a2a.h"
#include "errors.h"
#include "guard_zone.h"
#include "input_producer.h"
#include "kernel_instance.h"
#include "mutants.h"
#include "launch_observer.h"
#include "memory_stress_host.h"
#include "sm_pressure_host.h"
#include "symmetric_memory.h"
#include "sync_mode.h"

namespace dcp {
namespace {

size_t elem_bytes(DType d) { return d == DType::kFp32 ? 4 : 2; }

// How this process's threads wait for the device. Blocking by default: a
// worker's threads then sleep through each wait and leave the cores to the
// check (docs/results/2026-12-05-h100x1-throughput.md: +10% calls/s at world
// 4 and +20% at world 2 over CUDA's default, auto, on a host where the check
// bounds the run; no change where the device wait does).
// DCP_SYNC (diagnosis) overrides it: auto (CUDA's default), spin, yield, block.
void apply_sync_mode(int rank) {
  const SyncMode mode = sync_mode_from_env();
  const unsigned flags = mode == SyncMode::kAuto    ? cudaDeviceScheduleAuto
                         : mode == SyncMode::kSpin  ? cudaDeviceScheduleSpin
                         : mode == SyncMode::kYield ? cudaDeviceScheduleYield
                                                    : cudaDeviceScheduleBlockingSync;
  CUDA_CHECK(rank, HarnessError, cudaSetDeviceFlags(flags));
}

// The shape every call of one batch shares.
struct CallShape {
  int num_tokens = 0;
  // Sequence entries handed to the kernel (0: no masking). Padded to a value
  // fixed per case (see stage()), so a graph captured for one call's layout
  // serves every call of the case.
  int num_seq_slots = 0;
  int64_t out_stride = 0;
  int64_t lse_stride = 0;
  dcpDtype_t out = DCP_DTYPE_BF16;
  dcpDtype_t lse = DCP_DTYPE_FP32;
  bool base_e = false;
  size_t in_out_bytes = 0;
  size_t in_lse_bytes = 0;
  size_t output_bytes = 0;
  size_t lse_out_bytes = 0;  // the combined LSE, when the kernel writes it (else 0)
  Producer producer = Producer::kDefault;
  bool reuse = false;  // Case::reuse: NaN over both inputs right after the op
  // The calls carry CallInputs::device_check: checked on the device, their
  // [W][T] row kinds staged with the packed sources (kinds_bytes).
  bool device_check = false;
  bool lse_stream = false;  // partial_lse written from CallInputs::lse_stream
  size_t kinds_bytes = 0;
  int check_rows = 0;  // T * H
  // seq_lens then query_start_loc (0 bytes without masking).
  size_t seq_bytes() const {
    return num_seq_slots > 0 ? 2 * sizeof(int32_t) * (static_cast<size_t>(num_seq_slots) + 1) : 0;
  }
};

// A call's packed sources (call_prep.h): the token flags, the LSE bytes and
// the sequences, each at a 16-byte aligned offset, staged together and copied
// in with one copy; the preparation kernel reads them from there.
struct PackedInputs {
  size_t flags = 0, lse = 0, seqs = 0, kinds = 0, total = 0;
  explicit PackedInputs(const CallShape& sh) {
    auto up = [](size_t n) { return (n + 15) / 16 * 16; };
    lse = up(static_cast<size_t>(sh.num_tokens));
    seqs = lse + up(sh.lse_stream ? 0 : sh.in_lse_bytes);
    kinds = seqs + up(sh.seq_bytes());
    total = kinds + sh.kinds_bytes;
  }
};

// DCP_TRACE_STEPS=<ms> (diagnosis only, off by default): every step of a
// call is followed by a synchronize of its stream, and a step whose host call
// or whose completion took longer than <ms> is printed on stderr with the
// rank. It answers "what held the op up" (docs/DESIGN.md, "SM pressure").
class StepTrace {
 public:
  StepTrace(int rank, cudaStream_t s) : rank_(rank), s_(s) {}
  // A step on another stream than the call's (the check aside) names it.
  void mark(const char* step, cudaStream_t on = nullptr) {
    if (threshold_ms_ < 0) return;
    const double host_ms = lap();
    const cudaError_t err = cudaStreamSynchronize(on != nullptr ? on : s_);
    const double done_ms = lap();
    if (host_ms >= threshold_ms_ || done_ms >= threshold_ms_ || err != cudaSuccess) {
      fmt::print(stderr, "trace rank {}: {}: host call {:.3f} ms, then complete after {:.3f} ms{}\n",
                 rank_, step, host_ms, done_ms,
                 err == cudaSuccess ? "" : fmt::format(" ({})", cudaGetErrorName(err)));
    }
  }

 private:
  static double threshold() {  // read once per process: enqueue_call is a hot path
    static const double ms = [] {
      const char* v = std::getenv("DCP_TRACE_STEPS");
      return v == nullptr || *v == '\0' ? -1.0 : std::atof(v);
    }();
    return ms;
  }
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
    return ms;
  }
  int rank_;
  cudaStream_t s_;
  double threshold_ms_ = threshold();
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// DCP_STEP_TWICE=check|prep (diagnosis only, off by default): that step is
// launched twice per call, the second on the first's result (both are
// idempotent: the preparation rewrites the same inputs, the check's first run
// leaves its scratch zero and the second writes the same verdict). The
// throughput lost is the step's marginal cost in a real run, where the
// synchronised trace (DCP_TRACE_STEPS) times it alone (ci/gpu.sh perfdiag).
enum class TwiceStep { kNone, kCheck, kPrep };
TwiceStep step_twice() {  // read once per process: enqueue_call is a hot path
  static const TwiceStep step = [] {
    const char* v = std::getenv("DCP_STEP_TWICE");
    const std::string s = v == nullptr ? "" : v;
    return s == "check" ? TwiceStep::kCheck : s == "prep" ? TwiceStep::kPrep : TwiceStep::kNone;
  }();
  return step;
}

// DCP_CHECK_ASIDE=1 (off by default until it has run on a GPU): the device
// check runs aside, on its slot's check stream (docs/DESIGN.md, "The check
// aside"); else on the op stream after the op, as it always has.
bool check_aside() {  // read once per process: enqueue_call is a hot path
  static const bool aside = [] {
    const char* v = std::getenv("DCP_CHECK_ASIDE");
    return v != nullptr && std::string(v) == "1";
  }();
  return aside;
}

// How long the slow producer's last token row is late.
constexpr uint32_t kSlowProducerDelayNs = 30'000;

// `sequences` is seq_lens then query_start_loc, num_seq_slots + 1 int32 each;
// `packed` the call's packed sources (PackedInputs), one copy in; `output` is
// the output region (kernels/output_region.h: guards, output, combined LSE),
// filled by the preparation kernel before the call and copied out whole into
// the staging's `output` after it. The staging's partial_output holds bytes
// to copy in (the benchmark's inputs), never touched for streams.
struct CallBuffers {  // device side of one call
  DeviceBuffer partial_output, partial_lse, sequences, output, packed;
  DeviceBuffer check_scratch;  // the device checker's (DeviceCheckScratch)
  bool check_zeroed = false;   // check_scratch is all zero (launch_device_check)
  DeviceBuffer producer_params;  // the slow producer's (SlowProducerParams)
  // The check aside (check_aside): `op_done` orders it after the op; the
  // next call into these buffers waits for `checked` (the check and the copy
  // out read the region and `packed`) while check_pending, which is set when
  // a check is enqueued and cleared when the host has seen it complete.
  Event op_done, checked;
  bool check_pending = false;
};
struct CallStaging {  // host side of one call
  PinnedBuffer partial_output, packed, producer_params;
  PinnedBuffer check_result;  // the device checker's DeviceCheckResult
  // Leased from the backend's output pool (ensure); collect hands it to the
  // check with the output, and the next call leases another.
  std::shared_ptr<PinnedBuffer> output;
};
using OutputPool = BufferPool<PinnedBuffer>;
// Spare output buffers kept. Leases out at once: the batch being run, the
// one being checked, and a case's last batch checked beside the next case
// (a batch is a case's calls times its layers at most: 10 x 3).
constexpr size_t kSpareOutputs = 96;

// Everything one op launch reads: the plugin call's arguments. Zeroed with
// memset before it is filled, so two launches compare with memcmp: that
// comparison is the graph cache key (the stream is left out of it).
using OpLaunch = dcpCallArgs_v1;
static_assert(std::is_trivially_copyable_v<OpLaunch>);

// One mapped region of the kernel's workspace on this rank.
struct MappedRegion {
  dcpRegionRequest_v1 request;
  size_t tail_guard = 0;  // payload regions: canary bytes past request.bytes
  std::unique_ptr<SymmetricBuffer> symmetric;  // payload / control
  DeviceBuffer local;                          // local kind
  std::vector<void*> peers;
  DeviceBuffer peer_table;  // int64 [W]
};

// One captured op. Its buffers are its own: capturing another key (another
// T) on the slot never reallocates the buffers a cached graph replays from.
struct SlotGraph {
  GraphExec exec;
  OpLaunch key;
  Producer producer = Producer::kDefault;  // captured before the op, when not the default
  bool valid = false;
  uint64_t last_use = 0;  // for least-recently-used replacement
  CallBuffers buffers;
};

// A graph set needs at most 3 per slot ({1, 8, T}); one spare.
constexpr int kGraphsPerSlot = 4;

// One kernel context: its instance and its workspace (regions outlive instance).
struct KernelContext {
  std::vector<MappedRegion> regions;
  std::unique_ptr<KernelInstance> instance;
};

class GpuBackend final : public RankBackend {
 public:
  GpuBackend(const BackendConfig& cfg, Rendezvous& rendezvous);
  ~GpuBackend() override;
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;

  std::string name() const override { return "gpu"; }
  bool produces_inputs() const override { return true; }
  bool emits_combined_lse() const override {
    return cfg_.kernel->info().has(DCP_CAP_COMBINED_LSE);
  }
  bool checks_on_device() const override { return true; }
  void begin_case(const Case& c) override;
  bool begin_case_is_local(const Case& c) const override;
  std::vector<CallOutput> run_batch(const Case& c, const Batch& batch) override;
  std::vector<double> bench(const Case& c, const Batch& batch, const BenchTiming& timing,
                            const std::function<void()>& barrier) override;

 private:
  std::vector<CallOutput> run_batch_checked(const Case& c, const Batch& batch);
  void init_status();
  // Creates context `ctx` (a collective over the group: every rank, same point).
  void init_kernel(int ctx, Rendezvous& rendezvous, const InitInjection& inject = {});
  // Finalizes context `ctx` and frees its regions (a collective).
  void drop_context(int ctx);
  // An init-fault case: context 0 made again (init_with_fault).
  void restart_context(const Case& c);
  void map_regions(KernelContext& k, const std::string& suffix,
                   const std::vector<dcpRegionRequest_v1>& requests, Rendezvous& rendezvous);
  CallShape shape_of(const Case& c, const Batch& batch) const;
  void ensure(const CallShape& sh, CallBuffers& b, CallStaging& st) const;
  size_t capacity(size_t bytes) const;  // what ensure allocates for `bytes`
  size_t region_capacity(const CallShape& sh, const CallBuffers& b) const;
  void stage(const CallShape& sh, const CallInputs& in, CallStaging& st) const;
  OpLaunch make_launch(const CallShape& sh, int slot, const CallBuffers& b) const;
  void enqueue_op(const OpLaunch& op, cudaStream_t s, int ctx);
  void enqueue_inputs(const CallShape& sh, const CallInputs& in, CallStaging& st, CallBuffers& b,
                      cudaStream_t s);
  void enqueue_producer_params(const CallShape& sh, const CallInputs& in, CallStaging& st,
                               CallBuffers& b, cudaStream_t s);
  void launch_producer(const CallShape& sh, const CallBuffers& b, cudaStream_t s);
  void enqueue_call(const CallShape& sh, const CallInputs& in, CallStaging& st, CallBuffers& b,
                    cudaStream_t s, cudaGraphExec_t graph, PhaseTimes* phases);
  void capture(SlotGraph& g, const CallShape& sh, const OpLaunch& op, cudaStream_t s, int ctx);
  // The context's slot's graph for shape `sh`: a cached one whose key matches, else
  // the least recently used one with its buffers ensured for `sh` (not captured).
  SlotGraph& graph_for(const CallShape& sh, int ctx, int slot, CallStaging& st, bool* cached);
  cudaStream_t stream_for(int slot) const;
  cudaStream_t check_stream_for(int slot) const;
  void sync_ops();  // the op streams
  void sync_all();  // the op streams and the check streams
  // Throws for a failed CUDA call of a batch: device faults (and any error in
  // the op's own launch) are the kernel's, the rest the harness's.
  void check(cudaError_t err, const char* what, bool in_op) const;
  std::string status_text() const;
  OutputRegion region_of(const CallShape& sh, const CallBuffers& b) const {
    OutputRegion r;
    r.base = b.output.data();
    r.guard_bytes = guard_;
    r.out_bytes = sh.output_bytes;
    r.lse_bytes = sh.lse_out_bytes;
    return r;
  }
  uint8_t* output_of(const CallBuffers& b) const {
    return static_cast<uint8_t*>(b.output.data()) + guard_;
  }
  // The combined LSE: right after the output's second guard.
  uint8_t* lse_of(const CallShape& sh, const CallBuffers& b) const {
    return output_of(b) + sh.output_bytes + guard_;
  }
  void check_guards(const CallShape& sh, const CallInputs& in, const CallStaging& st,
                    std::vector<std::string>* out) const;
  // The payload regions' tail guards: copied into tails_host_ on stream 0
  // after every stream's work so far (enqueue_region_tails, before a batch's
  // last wait: no round trip of its own), then compared with the canary
  // (check_region_tails, which copies them itself when none are pending).
  size_t region_tails_bytes() const;  // every context's tail guards together
  void enqueue_region_tails();
  void check_region_tails(std::vector<std::string>* out);
  void churn_after_capture(const CallShape& sh, cudaStream_t s);
  void check_churn(std::vector<std::string>* out);

  BackendConfig cfg_;
  size_t guard_ = 0;               // bytes of each output guard zone
  const Case* current_ = nullptr;  // for messages, valid during run_batch
  std::array<Stream, kMaxSlots> streams_;
  // The device check of slot i's calls, beside the op stream (check_aside):
  // the default priority, below the ops', so an op's blocks are placed first.
  std::array<Stream, kMaxSlots> check_streams_;
  std::array<Event, kMaxSlots> joins_;        // stream i's work so far, for stream 0
  PinnedBuffer tails_host_;                    // the tail guards, region after region
  bool tails_pending_ = false;                 // tails_host_ is being filled for this batch
  // Status record: device pointer for the kernel, host pointer for messages.
  WaitStatus* status_dev_ = nullptr;
  WaitStatus* status_host_ = nullptr;
  void* registered_base_ = nullptr;  // page this backend registered, if any
  WaitStatus* fallback_status_ = nullptr;
  // The kernel under test: context 0 from start-up, context 1 made by the
  // first case with num_contexts == 2 (begin_case, between group barriers).
  std::array<KernelContext, kMaxContexts> contexts_;
  Rendezvous* rendezvous_ = nullptr;  // the worker's, outlives this backend
  // Buffers.
  // Two: with the check aside, eager call k + 1 runs beside call k's check.
  std::array<CallBuffers, 2> eager_buffers_;
  std::vector<CallBuffers> pipe_buffers_;
  std::vector<CallStaging> staging_;
  std::shared_ptr<OutputPool> output_pool_;
  std::array<std::array<std::array<SlotGraph, kGraphsPerSlot>, kMaxSlots>, kMaxContexts> graphs_;
  // One eager call ran on the context's slot (eager-before-capture).
  std::array<std::array<bool, kMaxSlots>, kMaxContexts> warmed_{};
  uint64_t graph_uses_ = 0;
  AllocChurn churn_;  // churn cases: blocks allocated after each capture, holding the canary
  std::unique_ptr<SmPressure> pressure_;  // made by the first pressure case
  std::unique_ptr<MemoryStress> mstress_;  // made by the first memory-stress case
  // (context, out dtype, LSE dtype, producer) that ran a call before a pressure.
  std::set<std::tuple<int, int, int, int>> pressure_warmed_;
  int inits_ = 0;  // contexts made so far: names each init's exchanges
  // The value table on the device: preparation and device check read it.
  DeviceBuffer value_table_mem_;
  DeviceValueTable value_table_;
  void start_pressure(const Case& c, const CallShape& sh, const Batch& batch);
  // The memory stress of case `c` (none unless c.mstress) for `calls` calls.
  void kick_memory_stress(const Case& c, int calls);
};

GpuBackend::GpuBackend(const BackendConfig& cfg, Rendezvous& rendezvous) : cfg_(cfg) {
  const int rank = cfg_.global_rank;
  DCP_CHECK(cfg_.kernel != nullptr, HarnessError, "rank {}: no kernel under test", rank);
  DCP_CHECK(static_cast<int>(cfg_.members.size()) == cfg_.dcp_size, HarnessError,
            "group of {} ranks lists {} members", cfg_.dcp_size, cfg_.members.size());
  const Geometry& g = cfg_.geometry;
  DCP_CHECK(g.max_tokens >= 1 && g.heads_per_rank >= 1 && g.head_dim >= 8 && g.head_dim % 8 == 0,
            UsageError,
            "geometry H={} D={} max_tokens={} is not supported (D must be a multiple of 8)",
            g.heads_per_rank, g.head_dim, g.max_tokens);
  CUDA_CHECK(rank, HarnessError, cudaSetDevice(cfg_.device));
  apply_sync_mode(rank);
  guard_ = guard_bytes_for(size_t{2} * g.heads_per_rank * g.head_dim);
  output_pool_ = OutputPool::create(rank, kSpareOutputs);
  // The op's streams come first: SM pressure (whose blocks may wait for SMs
  // under MPS) never delays the op's launches, it only takes SMs.
  for (Stream& s : streams_) s.create(rank, /*greatest_priority=*/true);
  for (Stream& s : check_streams_) s.create(rank);
  for (Event& e : joins_) e.create(rank);
  for (size_t i = 0; i < streams_.size(); ++i) {
    launch_observer::name_stream(streams_[i].get(), fmt::format("dcp{} slot {}", cfg_.dcp_size, i));
    launch_observer::name_stream(check_streams_[i].get(),
                                 fmt::format("dcp{} slot {} check", cfg_.dcp_size, i));
  }
  init_status();
  value_table_mem_.ensure(device_value_table_bytes(), rank);
  {
    const launch_observer::Unobserved ours;
    CUDA_CHECK(rank, HarnessError,
               fill_device_value_table(value_table_mem_.data(), streams_[0].get(), &value_table_));
  }
  CUDA_CHECK(rank, HarnessError, cudaStreamSynchronize(streams_[0].get()));
  CUDA_CHECK(rank, HarnessError, reserve_device_check_stack());  // before any op runs
  rendezvous_ = &rendezvous;
  init_kernel(0, rendezvous);
}

// The kernels write WaitStatus through mapped pinned memory so the supervisor
// reads it from the shared page even while this process is stuck. The page is
// registered once per process; a second backend of the same process finds it
// registered and shares it.
void GpuBackend::init_status() {
  const int rank = cfg_.global_rank;
  if (cfg_.status != nullptr) {
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto addr = reinterpret_cast<uintptr_t>(cfg_.status);
    const uintptr_t base = addr / page * page;
    const uintptr_t end = (addr + sizeof(WaitStatus) + page - 1) / page * page;
    const cudaError_t err = cudaHostRegister(reinterpret_cast<void*>(base), end - base,
                                             cudaHostRegisterMapped | cudaHostRegisterPortable);
    bool usable = true;
    if (err == cudaSuccess) {
      registered_base_ = reinterpret_cast<void*>(base);
    } else if (err != cudaErrorHostMemoryAlreadyRegistered) {
      usable = false;
      spdlog::warn(
          "rank {}: cannot register the status board page ({}); the device's wait state will "
          "only appear in trap messages, not in the supervisor's diagnosis",
          rank, cuda_error_text(err));
    }
    cudaGetLastError();  // registration errors are not sticky; clear them
    if (usable) {
      void* dev = nullptr;
      CUDA_CHECK(rank, HarnessError, cudaHostGetDevicePointer(&dev, cfg_.status, 0));
      status_dev_ = static_cast<WaitStatus*>(dev);
      status_host_ = cfg_.status;
      return;
    }
  }
  void* host = nullptr;
  CUDA_CHECK(rank, HarnessError, cudaHostAlloc(&host, sizeof(WaitStatus), cudaHostAllocMapped));
  std::memset(host, 0, sizeof(WaitStatus));
  fallback_status_ = static_cast<WaitStatus*>(host);
  void* dev = nullptr;
  CUDA_CHECK(rank, HarnessError, cudaHostGetDevicePointer(&dev, host, 0));
  status_dev_ = static_cast<WaitStatus*>(dev);
  status_host_ = fallback_status_;
}

// query -> allocate and map -> init (agreed across the group). The init
// agreement is itself a group barrier: no rank calls before every rank is ready.
// Context k > 0 names its exchanges and regions with the suffix "/ctx<k>".
void GpuBackend::init_kernel(int ctx, Rendezvous& rendezvous, const InitInjection& inject) {
  KernelContext& k = contexts_[static_cast<size_t>(ctx)];
  std::string suffix = ctx == 0 ? "" : fmt::format("/ctx{}", ctx);
  if (inits_++ > 0) suffix += fmt::format("/init{}", inits_);  // a context made again
  KernelGroup group = kernel_group(cfg_, cfg_.device, status_dev_);
  group.key += suffix;
  k.instance = std::make_unique<KernelInstance>(cfg_.kernel, group);
  map_regions(k, suffix, k.instance->query_workspace(rendezvous), rendezvous);
  std::vector<dcpRegion_v1> mapped;
  for (const MappedRegion& m : k.regions) {
    dcpRegion_v1 r{};
    r.struct_size = sizeof r;
    r.name = m.request.name;
    r.kind = m.request.kind;
    r.bytes = m.request.bytes;
    r.local = m.peers[cfg_.group_rank];
    r.peers = m.peers.data();
    r.peers_device = static_cast<const int64_t*>(m.peer_table.data());
    r.peer_stride = 0;  // CUDA IPC maps every peer separately: no uniform stride
    mapped.push_back(r);
  }
  k.instance->init(mapped, rendezvous, inject);
}

void GpuBackend::drop_context(int ctx) {
  KernelContext& k = contexts_[static_cast<size_t>(ctx)];
  sync_all();
  k.instance.reset();  // finalize
  launch_observer::remove_dump_regions(&k);
  for (MappedRegion& m : k.regions) {
    if (m.symmetric != nullptr) m.symmetric->close_peers();
  }
  rendezvous_->barrier(fmt::format("{}/dcp{}g{}/{}/dropped{}", cfg_.run_id, cfg_.dcp_size,
                                   cfg_.group_idx, cfg_.kernel->info().name, inits_),
                       cfg_.members);
  k.regions.clear();  // no peer maps them any more
}

// The fresh context starts at epoch 0 on every slot, as at start-up, and its
// first calls are first calls again (eager-before-capture, pressure warm-up).
void GpuBackend::restart_context(const Case& c) {
  init_with_fault(
      c, cfg_.group_rank, [this] { drop_context(0); },
      [this](const InitInjection& inject) { init_kernel(0, *rendezvous_, inject); });
  warmed_[0] = {};
  pressure_warmed_.clear();
  if (status_host_ != nullptr) restart_slot_records(*status_host_, 0);
}

// Every region on every rank, in request order (a collective: the requests
// are identical on every rank, checked by query_workspace). Local regions are
// plain device memory; their peer table holds only this rank's entry.
void GpuBackend::map_regions(KernelContext& k, const std::string& suffix,
                             const std::vector<dcpRegionRequest_v1>& requests,
                             Rendezvous& rendezvous) {
  const int rank = cfg_.global_rank;
  k.regions.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    MappedRegion& m = k.regions[i];
    m.request = requests[i];
    const dcpRegionRequest_v1& q = m.request;
    const size_t align = q.alignment == 0 ? 256 : q.alignment;
    m.peers.assign(cfg_.dcp_size, nullptr);
    if (q.kind == DCP_REGION_LOCAL) {
      m.local.ensure(q.bytes, rank);
      m.peers[cfg_.group_rank] = m.local.data();
    } else {
      SymmetricRequest req;
      if (q.kind == DCP_REGION_PAYLOAD) m.tail_guard = guard_bytes_for(0);
      req.bytes = q.bytes + m.tail_guard;
      req.device = cfg_.device;
      req.global_rank = rank;
      req.group_rank = cfg_.group_rank;
      req.members = cfg_.members;
      req.key = fmt::format("{}/dcp{}g{}/{}/{}{}", cfg_.run_id, cfg_.dcp_size, cfg_.group_idx,
                            cfg_.kernel->info().name, q.name, suffix);
      m.symmetric = make_cuda_ipc_buffer(req, rendezvous);  // zeroed
      m.peers = m.symmetric->peers();
    }
    for (void* p : m.peers) {
      DCP_CHECK(p == nullptr || reinterpret_cast<uintptr_t>(p) % align == 0, HarnessError,
                "region '{}' mapped at {} is not {}-byte aligned", q.name, p, align);
    }
    void* local = m.peers[cfg_.group_rank];
    if (q.init == DCP_REGION_INIT_FILL) {
      CUDA_CHECK(rank, HarnessError, cudaMemset(local, static_cast<int>(q.fill_byte), q.bytes));
    } else if (q.init == DCP_REGION_INIT_ZERO && q.kind == DCP_REGION_LOCAL) {
      CUDA_CHECK(rank, HarnessError, cudaMemset(local, 0, q.bytes));
    }
    if (m.tail_guard > 0) {
      CUDA_CHECK(rank, HarnessError,
                 cudaMemset(static_cast<uint8_t*>(local) + q.bytes, kGuardCanary, m.tail_guard));
      // Pinned here, with the region, never between a batch's launches and its sync.
      tails_host_.ensure(region_tails_bytes(), rank);
    }
    // Dumped at a hang: the CONTROL regions, and LOCAL ones small enough to
    // be epochs or counters rather than staging.
    if (q.kind == DCP_REGION_CONTROL || (q.kind == DCP_REGION_LOCAL && q.bytes <= 4096)) {
      launch_observer::add_dump_region(&k, cfg_.dcp_size, static_cast<int>(&k - contexts_.data()),
                                       q.name, q.kind == DCP_REGION_LOCAL, local, q.bytes);
    }
    std::vector<int64_t> table(cfg_.dcp_size, 0);
    for (int r = 0; r < cfg_.dcp_size; ++r) table[r] = reinterpret_cast<int64_t>(m.peers[r]);
    m.peer_table.ensure(sizeof(int64_t) * cfg_.dcp_size, rank);
    CUDA_CHECK(rank, HarnessError,
               cudaMemcpy(m.peer_table.data(), table.data(), sizeof(int64_t) * cfg_.dcp_size,
                          cudaMemcpyHostToDevice));
  }
  CUDA_CHECK(rank, HarnessError, cudaDeviceSynchronize());
  // Initial contents are in place on every rank before any init may read a peer's.
  rendezvous.barrier(fmt::format("{}/dcp{}g{}/{}/filled{}", cfg_.run_id, cfg_.dcp_size,
                                 cfg_.group_idx, cfg_.kernel->info().name, suffix),
                     cfg_.members);
}

GpuBackend::~GpuBackend() {
  cudaSetDevice(cfg_.device);
  for (Stream& s : streams_) cudaStreamSynchronize(s.get());
  for (KernelContext& k : contexts_) {
    k.instance.reset();  // finalize before the regions are unmapped
    launch_observer::remove_dump_regions(&k);
    k.regions.clear();
  }
  if (registered_base_ != nullptr) cudaHostUnregister(registered_base_);
  if (fallback_status_ != nullptr) cudaFreeHost(fallback_status_);
}

// ----------------------------------------------------------------- per case

// Between the group's two barriers (every rank idle): payload regions are
// poisoned (their contents must not matter between calls), then the epoch is
// set when the case starts near the wrap.
// Shared state begin_case may reset: a restarted context (init faults), the
// second context's collective creation, slot epochs, payload regions peers
// write into. Without those it only syncs this rank (first) and drops its own
// graphs and churn blocks.
bool GpuBackend::begin_case_is_local(const Case& c) const {
  if (c.init_fault != InitFault::kNone || c.num_contexts > 1 || c.epoch_start.has_value()) {
    return false;
  }
  for (const KernelContext& k : contexts_) {
    for (const MappedRegion& m : k.regions) {
      if (m.request.kind == DCP_REGION_PAYLOAD) return false;
    }
  }
  return true;
}

void GpuBackend::begin_case(const Case& c) {
  const int rank = cfg_.global_rank;
  CUDA_CHECK(rank, HarnessError, cudaSetDevice(cfg_.device));
  DCP_CHECK(c.dcp_size == cfg_.dcp_size, HarnessError,
            "case for a DCP group of {} sent to a backend of {}", c.dcp_size, cfg_.dcp_size);
  DCP_CHECK(c.num_contexts >= 1 && c.num_contexts <= kMaxContexts, HarnessError,
            "case {} asks for {} kernel contexts (at most {})", format_case_id(c), c.num_contexts,
            kMaxContexts);
  current_ = &c;
  sync_all();
  // A case captures its own graphs: none replays a capture of another case,
  // so what a graph set's replays read is what this case's captures left.
  // Dropped first: they may refer to what a context re-made below frees.
  for (auto& context : graphs_) {
    for (auto& slot : context) {
      for (SlotGraph& g : slot) {
        g.exec.reset();
        g.valid = false;
      }
    }
  }
  check(churn_.release(nullptr), "free churn blocks", false);
  if (c.init_fault != InitFault::kNone) restart_context(c);
  for (int k = 1; k < c.num_contexts; ++k) {
    KernelContext& context = contexts_[static_cast<size_t>(k)];
    if (context.instance != nullptr) continue;
    try {
      init_kernel(k, *rendezvous_);
    } catch (...) {
      context.instance.reset();  // never half made: a later case would call it
      context.regions.clear();
      throw;
    }
  }
  for (const KernelContext& k : contexts_) {
    for (const MappedRegion& m : k.regions) {
      if (m.request.kind != DCP_REGION_PAYLOAD) continue;
      check(cudaMemsetAsync(m.peers[cfg_.group_rank], 0xFF, m.request.bytes, streams_[0].get()),
            "poison payload region", false);
    }
  }
  if (c.epoch_start.has_value()) {
    for (const KernelContext& k : contexts_) {
      if (k.instance == nullptr) continue;
      for (int slot = 0; slot < k.instance->config().num_slots; ++slot) {
        k.instance->set_epoch(slot, uint64_t{*c.epoch_start}, streams_[0].get());
      }
    }
    // One wait-status record per rank, whichever contexts it has.
    const int slots = contexts_[0].instance->config().num_slots;
    for (int slot = 0; status_host_ != nullptr && slot < std::min(slots, kMaxSlots); ++slot) {
      restart_slot_record(*status_host_, slot, *c.epoch_start);
    }
  }
  sync_all();
  current_ = nullptr;
}

CallShape GpuBackend::shape_of(const Case& c, const Batch& batch) const {
  const Geometry& g = cfg_.geometry;
  DCP_CHECK(c.dcp_size == cfg_.dcp_size, HarnessError,
            "case for a DCP group of {} sent to a backend of {}", c.dcp_size, cfg_.dcp_size);
  DCP_CHECK(c.geometry.heads_per_rank == g.heads_per_rank && c.geometry.head_dim == g.head_dim &&
                c.geometry.max_tokens == g.max_tokens,
            HarnessError,
            "case geometry H={} D={} max={} differs from the workspace's H={} D={} "
            "max={}",
            c.geometry.heads_per_rank, c.geometry.head_dim, c.geometry.max_tokens, g.heads_per_rank,
            g.head_dim, g.max_tokens);
  // max_tokens + 1 is the capacity case: the kernel's call must refuse it.
  DCP_CHECK(c.num_tokens >= 1 && c.num_tokens <= g.max_tokens + 1, UsageError,
            "{} tokens: must be in [1, max_tokens={}]", c.num_tokens, g.max_tokens);
  DCP_CHECK(c.out_dtype == DType::kFp16 || c.out_dtype == DType::kBf16, UsageError,
            "output dtype {} is not supported (fp16 or bf16)", to_string(c.out_dtype));
  CallShape sh;
  sh.num_tokens = c.num_tokens;
  sh.out_stride = c.out_token_stride();
  sh.lse_stride = c.lse_token_stride();
  sh.out = abi_dtype(c.out_dtype);
  sh.lse = abi_dtype(c.lse_dtype);
  sh.base_e = c.lse_base == LseBase::kE;
  sh.in_out_bytes = size_t{2} * c.num_tokens * sh.out_stride;
  sh.in_lse_bytes = elem_bytes(c.lse_dtype) * c.num_tokens * sh.lse_stride;
  sh.output_bytes = output_bytes(c);
  sh.lse_out_bytes = emits_combined_lse() ? combined_lse_bytes(c) : 0;
  sh.producer = c.producer;
  sh.reuse = c.reuse;
  sh.device_check = !batch.calls.empty() && batch.calls.front().device_check.has_value();
  sh.lse_stream = !batch.calls.empty() && batch.calls.front().lse_stream.has_value();
  if (sh.device_check || sh.lse_stream) sh.kinds_bytes = static_cast<size_t>(c.dcp_size) * c.num_tokens;
  if (sh.device_check) sh.check_rows = c.num_tokens * g.heads_per_rank;
  const bool masked = !batch.calls.empty() && !batch.calls.front().seq_lens.empty();
  int max_seqs = 0;
  for (const CallInputs& in : batch.calls) {
    DCP_CHECK(in.seq_lens.empty() != masked, HarnessError,
              "calls of one batch disagree on whether seq_lens is given");
    max_seqs = std::max(max_seqs, static_cast<int>(in.seq_lens.size()));
  }
  if (masked) sh.num_seq_slots = std::max(c.num_tokens, max_seqs);
  return sh;
}

// ---------------------------------------------------------------- per call

// A growth reallocates (cudaFree waits for the whole device, pinned memory is
// slow to allocate): sizes are rounded up to a power of two (at least 4 KiB)
// unless cfg_.exact_buffers, so shapes met later rarely grow a buffer again.
size_t GpuBackend::capacity(size_t bytes) const {
  if (cfg_.exact_buffers || bytes == 0) return bytes;
  size_t c = 4096;
  while (c < bytes) c *= 2;
  return c;
}

// The output region's: its output and LSE rounded, then its guards (an output
// of a power of two plus guards would otherwise double).
size_t GpuBackend::region_capacity(const CallShape& sh, const CallBuffers& b) const {
  const OutputRegion r = region_of(sh, b);
  return capacity(r.out_bytes + r.lse_bytes) + (r.total_bytes() - r.out_bytes - r.lse_bytes);
}

void GpuBackend::ensure(const CallShape& sh, CallBuffers& b, CallStaging& st) const {
  const int rank = cfg_.global_rank;
  const PackedInputs packed(sh);
  b.partial_output.ensure(capacity(sh.in_out_bytes), rank);
  b.partial_lse.ensure(capacity(sh.in_lse_bytes), rank);
  b.sequences.ensure(capacity(std::max(sh.seq_bytes(), 2 * sizeof(int32_t))), rank);
  b.output.ensure(region_capacity(sh, b), rank);
  b.packed.ensure(capacity(packed.total), rank);
  if (sh.producer != Producer::kDefault) {
    b.producer_params.ensure(sizeof(SlowProducerParams), rank);
    st.producer_params.ensure(sizeof(SlowProducerParams), rank);
  }
  st.packed.ensure(capacity(packed.total), rank);
  if (sh.device_check) {
    const size_t scratch =
        DeviceCheckScratch::bytes(sh.check_rows, sh.output_bytes, sh.lse_out_bytes);
    if (b.check_scratch.bytes() < scratch) {
      b.check_scratch.ensure(capacity(scratch), rank);
      b.check_zeroed = false;
    }
    st.check_result.ensure(sizeof(DeviceCheckResult), rank);
    if (b.checked.get() == nullptr) {
      b.op_done.create(rank);
      b.checked.create(rank);
    }
  }
  const size_t region = region_capacity(sh, b);
  if (st.output == nullptr) {
    st.output = output_pool_->take(region);
  } else {
    st.output->ensure(region, rank);
  }
}

// Copies one call's inputs into pinned staging (PackedInputs). Sequences are
// padded to num_seq_slots with empty ranges at the end (query_start_loc
// repeats its last entry, seq_lens 1): no token falls into them, so masking
// is unchanged. partial_output is either bytes (staged apart, copied) or
// streams (only their per-token flags are staged; the preparation kernel
// writes the values on the device).
void GpuBackend::stage(const CallShape& sh, const CallInputs& in, CallStaging& st) const {
  const size_t out_bytes =
      in.output_streams ? in.output_streams->token_normal.size() : in.partial_output.size();
  const size_t want_out = in.output_streams ? static_cast<size_t>(sh.num_tokens) : sh.in_out_bytes;
  const size_t want_lse = sh.lse_stream ? 0 : sh.in_lse_bytes;
  DCP_CHECK(out_bytes == want_out && in.partial_lse.size() == want_lse &&
                in.lse_stream.has_value() == sh.lse_stream,
            HarnessError, "call {}: inputs of {} and {} bytes, expected {} and {}", in.op_idx,
            out_bytes, in.partial_lse.size(), want_out, want_lse);
  DCP_CHECK(in.slot >= 0 && in.slot < kMaxSlots, HarnessError, "call {}: slot {} out of range",
            in.op_idx, in.slot);
  const PackedInputs packed(sh);
  auto* staged = static_cast<uint8_t*>(st.packed.data());
  if (in.output_streams) {
    std::memcpy(staged + packed.flags, in.output_streams->token_normal.data(), out_bytes);
  } else {
    st.partial_output.ensure(capacity(sh.in_out_bytes), cfg_.global_rank);
    std::memcpy(st.partial_output.data(), in.partial_output.data(), sh.in_out_bytes);
  }
  std::memcpy(staged + packed.lse, in.partial_lse.data(), want_lse);
  if (sh.kinds_bytes > 0) {
    DCP_CHECK(in.device_check.has_value() == sh.device_check &&
                  in.row_kinds.size() == sh.kinds_bytes,
              HarnessError, "call {}: {} row kinds, expected {}", in.op_idx, in.row_kinds.size(),
              sh.kinds_bytes);
    std::memcpy(staged + packed.kinds, in.row_kinds.data(), sh.kinds_bytes);
  }
  if (sh.num_seq_slots == 0) return;
  const size_t num_seqs = in.seq_lens.size();
  DCP_CHECK(in.query_start_loc.size() == num_seqs + 1, HarnessError,
            "call {}: {} seq_lens but {} query_start_loc entries", in.op_idx, num_seqs,
            in.query_start_loc.size());
  auto* lens = reinterpret_cast<int32_t*>(staged + packed.seqs);
  int32_t* qsl = lens + sh.num_seq_slots + 1;
  for (int s = 0; s < sh.num_seq_slots; ++s) {
    lens[s] = s < static_cast<int>(num_seqs) ? in.seq_lens[s] : 1;
  }
  for (int s = 0; s <= sh.num_seq_slots; ++s) {
    qsl[s] = in.query_start_loc[std::min<size_t>(s, num_seqs)];
  }
}

OpLaunch GpuBackend::make_launch(const CallShape& sh, int slot, const CallBuffers& b) const {
  OpLaunch op;
  std::memset(&op, 0, sizeof op);
  const bool masked = sh.num_seq_slots > 0;
  op.struct_size = sizeof op;
  op.slot = slot;
  op.num_tokens = sh.num_tokens;
  op.partial_output = b.partial_output.data();
  op.out_token_stride = sh.out_stride;
  op.out_dtype = sh.out;
  op.partial_lse = b.partial_lse.data();
  op.lse_token_stride = sh.lse_stride;
  op.lse_dtype = sh.lse;
  op.lse_base = sh.base_e ? DCP_LSE_BASE_E : DCP_LSE_BASE_2;
  if (masked) {
    op.seq_lens = static_cast<const int32_t*>(b.sequences.data());
    op.query_start_loc = op.seq_lens + sh.num_seq_slots + 1;
    op.num_seqs = sh.num_seq_slots;
  }
  op.output = output_of(b);
  if (sh.lse_out_bytes > 0) op.combined_lse = reinterpret_cast<float*>(lse_of(sh, b));
  op.timeout_ns = static_cast<uint64_t>(std::max(1e-3, cfg_.spin_timeout_s) * 1e9);
  if (sh.producer == Producer::kSlowPdl) op.flags = DCP_CALL_PDL;
  return op;
}

void GpuBackend::enqueue_op(const OpLaunch& op, cudaStream_t s, int ctx) {
  DCP_CHECK(ctx >= 0 && ctx < kMaxContexts && contexts_[static_cast<size_t>(ctx)].instance,
            HarnessError, "call on kernel context {}, which this rank has not created", ctx);
  OpLaunch args = op;
  args.stream = s;
  contexts_[static_cast<size_t>(ctx)].instance->call(args);
}

// The call's inputs: partial_output's bytes when staged as bytes, the packed
// sources, then the preparation kernel (call_prep.h), which also fills the
// output region. With a slow producer both inputs are poisoned instead (0xFF:
// NaN in every dtype), so an op that reads before the producer wrote reads poison.
void GpuBackend::enqueue_inputs(const CallShape& sh, const CallInputs& in, CallStaging& st,
                                CallBuffers& b, cudaStream_t s) {
  const PackedInputs packed(sh);
  if (!in.output_streams) {
    check(cudaMemcpyAsync(b.partial_output.data(), st.partial_output.data(), sh.in_out_bytes,
                          cudaMemcpyHostToDevice, s),
          "copy partial_output in", false);
  }
  check(cudaMemcpyAsync(b.packed.data(), st.packed.data(), packed.total, cudaMemcpyHostToDevice, s),
        "copy token flags, LSE and sequences in", false);
  const auto* sources = static_cast<const uint8_t*>(b.packed.data());
  CallPrep p;
  if (in.output_streams) {
    p.recipe = in.output_streams->recipe(*current_, sources + packed.flags);
    p.recipe.table = value_table_.bits;
    p.partial_output = static_cast<uint16_t*>(b.partial_output.data());
  }
  p.poison_inputs = sh.producer != Producer::kDefault;
  p.lse_src = sources + packed.lse;
  if (sh.lse_stream) {
    p.lse_from_stream = true;
    p.lse_stream = *in.lse_stream;
    p.lse_stream.kinds = sources + packed.kinds + static_cast<size_t>(in.lse_stream->src) * sh.num_tokens;
  }
  p.partial_lse = static_cast<uint8_t*>(b.partial_lse.data());
  p.lse_bytes = sh.in_lse_bytes;
  p.seq_src = sources + packed.seqs;
  p.sequences = static_cast<uint8_t*>(b.sequences.data());
  p.seq_bytes = sh.seq_bytes();
  p.region = region_of(sh, b);
  p.canary = kGuardCanary;
  for (int i = step_twice() == TwiceStep::kPrep ? 2 : 1; i > 0; --i) {
    check(launch_call_prep(p, s), "prepare inputs, poison output, fill guards", false);
  }
}

// The slow producer's parameters; it reads the token flags and the LSE bytes
// from the packed sources, which enqueue_inputs copies in next.
void GpuBackend::enqueue_producer_params(const CallShape& sh, const CallInputs& in,
                                         CallStaging& st, CallBuffers& b, cudaStream_t s) {
  DCP_CHECK(in.output_streams.has_value(), HarnessError,
            "call {}: a slow producer needs the output's streams", in.op_idx);
  const PackedInputs packed(sh);
  const auto* sources = static_cast<const uint8_t*>(b.packed.data());
  SlowProducerParams p{};
  p.recipe = in.output_streams->recipe(*current_, sources + packed.flags);
  p.recipe.table = value_table_.bits;
  p.partial_output = static_cast<uint16_t*>(b.partial_output.data());
  p.lse_src = sources + packed.lse;
  p.partial_lse = static_cast<uint8_t*>(b.partial_lse.data());
  p.lse_row_bytes = static_cast<int64_t>(sh.in_lse_bytes / sh.num_tokens);
  p.delay_ns = kSlowProducerDelayNs;
  std::memcpy(st.producer_params.data(), &p, sizeof p);
  check(cudaMemcpyAsync(b.producer_params.data(), st.producer_params.data(), sizeof p,
                        cudaMemcpyHostToDevice, s),
        "copy producer parameters in", false);
}

void GpuBackend::launch_producer(const CallShape& sh, const CallBuffers& b, cudaStream_t s) {
  check(launch_slow_input_producer(static_cast<const SlowProducerParams*>(b.producer_params.data()),
                                   sh.num_tokens, sh.out_stride,
                                   sh.producer == Producer::kSlowPdl, s),
        "slow producer", false);
}

void GpuBackend::enqueue_call(const CallShape& sh, const CallInputs& in, CallStaging& st,
                              CallBuffers& b, cudaStream_t s, cudaGraphExec_t graph,
                              PhaseTimes* phases) {
  PhaseClock clock;
  const launch_observer::OpScope op_scope(in.op_idx, in.slot, cfg_.dcp_size);
  StepTrace trace(cfg_.global_rank, s);
  if (b.check_pending) {  // its last check (aside) may still read the region and `packed`
    check(cudaStreamWaitEvent(s, b.checked.get(), 0), "wait for the buffers' last check", false);
  }
  stage(sh, in, st);
  if (phases != nullptr) clock.lap(phases->stage_ms);
  trace.mark("stage");
  const bool slow = sh.producer != Producer::kDefault;
  if (slow) enqueue_producer_params(sh, in, st, b, s);
  enqueue_inputs(sh, in, st, b, s);
  trace.mark("inputs, poison and guards");
  check(launch_delay(in.skew_ns, s), "skew delay", false);
  trace.mark("skew delay");
  if (graph != nullptr) {
    check(cudaGraphLaunch(graph, s), "graph replay", true);  // holds the slow producer too
  } else {
    if (slow) launch_producer(sh, b, s);
    enqueue_op(make_launch(sh, in.slot, b), s, in.context);
  }
  trace.mark("op");
  // The check aside starts when the op is done; the input reuse and the
  // memory stress's release below touch nothing it reads.
  const bool aside = sh.device_check && check_aside();
  const cudaStream_t cs = aside ? check_stream_for(in.slot) : s;
  if (aside) {
    check(cudaEventRecord(b.op_done.get(), s), "record the op's end", false);
    check(cudaStreamWaitEvent(cs, b.op_done.get(), 0), "order the check after the op", false);
  }
  if (sh.reuse) {
    // The caller reuses the inputs at once (issue 15 item 7): stream-ordered
    // after the op (or its replay), before the peers' combines need have ended.
    check(cudaMemsetAsync(b.partial_output.data(), 0xFF, sh.in_out_bytes, s),
          "overwrite partial_output after the call", false);
    check(cudaMemsetAsync(b.partial_lse.data(), 0xFF, sh.in_lse_bytes, s),
          "overwrite partial_lse after the call", false);
    trace.mark("input reuse");
  }
  // A memory-stress case's stress covers the op, not the check after it.
  if (current_ != nullptr && current_->mstress && mstress_ != nullptr) mstress_->release(s);
  const OutputRegion region = region_of(sh, b);
  if (sh.device_check) {
    DeviceCheckParams p = *in.device_check;
    p.output = output_of(b);
    p.combined_lse = sh.lse_out_bytes > 0 ? reinterpret_cast<const float*>(lse_of(sh, b)) : nullptr;
    p.row_kinds = static_cast<const uint8_t*>(b.packed.data()) + PackedInputs(sh).kinds;
    p.table = value_table_.bits;
    const launch_observer::Unobserved ours;
    auto* result = static_cast<DeviceCheckResult*>(st.check_result.data());
    result->written = 0;  // collect refuses a result this check did not write
    bool zeroed = b.check_zeroed;
    for (int i = step_twice() == TwiceStep::kCheck ? 2 : 1; i > 0; --i) {
      check(launch_device_check(p, region, kGuardCanary, b.check_scratch.data(),
                                b.check_scratch.bytes(), zeroed, result, cs),
            "device check", false);
      zeroed = true;  // a second check (stream-ordered) finds the scratch the first left zero
    }
    b.check_zeroed = false;  // until the check is seen complete (collect)
    trace.mark("device check", cs);
  }
  if (!sh.device_check || in.copy_output) {
    check(cudaMemcpyAsync(st.output->data(), region.base, region.total_bytes(),
                          cudaMemcpyDeviceToHost, cs),
          "copy output region out", false);
    trace.mark("copies out", cs);
  }
  if (aside) {
    check(cudaEventRecord(b.checked.get(), cs), "record the check's end", false);
    b.check_pending = true;
  }
}

// The op, after the slow producer when the case has one (its parameters are
// read from g.buffers, refilled before each replay).
void GpuBackend::capture(SlotGraph& g, const CallShape& sh, const OpLaunch& op, cudaStream_t s,
                         int ctx) {
  g.exec.reset();
  g.valid = false;
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture", false);
  cudaGraph_t graph = nullptr;
  try {
    if (sh.producer != Producer::kDefault) launch_producer(sh, g.buffers, s);
    enqueue_op(op, s, ctx);
  } catch (...) {
    cudaStreamEndCapture(s, &graph);  // leave the stream usable, then report
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  check(cudaStreamEndCapture(s, &graph), "end capture", true);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check(err, "instantiate graph", true);
  g.exec.reset(exec);
  g.key = op;
  g.producer = sh.producer;
  g.valid = true;
}

// A key compares equal only when the shape and the buffers are those of the
// capture, so a cached graph's buffers already fit `sh`; the producer kind
// must match too (a slow producer is captured ahead of the op).
SlotGraph& GpuBackend::graph_for(const CallShape& sh, int ctx, int slot, CallStaging& st,
                                 bool* cached) {
  DCP_CHECK(ctx >= 0 && ctx < kMaxContexts, HarnessError, "kernel context {} out of range", ctx);
  auto& graphs = graphs_[static_cast<size_t>(ctx)][static_cast<size_t>(slot)];
  SlotGraph* victim = &graphs[0];
  for (SlotGraph& g : graphs) {
    if (g.valid) {
      const OpLaunch op = make_launch(sh, slot, g.buffers);
      if (std::memcmp(&op, &g.key, sizeof op) == 0 && g.producer == sh.producer) {
        ensure(sh, g.buffers, st);  // the staging; the buffers already fit
        *cached = true;
        return g;
      }
    }
    if (victim->valid && (!g.valid || g.last_use < victim->last_use)) victim = &g;
  }
  victim->exec.reset();
  victim->valid = false;
  ensure(sh, victim->buffers, st);
  *cached = false;
  return *victim;
}

// ----------------------------------------------------------------- batches

// A trap that surfaced at one of our own CUDA calls (CUDA_CHECK) is still the
// kernel's, with the device's wait diagnosis.
std::vector<CallOutput> GpuBackend::run_batch(const Case& c, const Batch& batch) {
  try {
    return run_batch_checked(c, batch);
  } catch (const StickyDeviceFault& e) {
    throw KernelFault(fmt::format("{} (in case {}); {}", e.what(), format_case_id(c), status_text()),
                      FailureKind::kTrap);
  }
}

std::vector<CallOutput> GpuBackend::run_batch_checked(const Case& c, const Batch& batch) {
  PhaseClock setup_clock;  // laps PhaseTimes::setup_ms: the work before and between the calls
  CUDA_CHECK(cfg_.global_rank, HarnessError, cudaSetDevice(cfg_.device));
  DCP_CHECK(batch.mode != ExecMode::kMixed && batch.mode != ExecMode::kGraphSet, HarnessError,
            "a batch is never mixed or a graph set (plan_case splits them)");
  current_ = &c;
  const CallShape sh = shape_of(c, batch);
  const size_t n = batch.calls.size();
  if (staging_.size() < std::max<size_t>(n, 2)) staging_.resize(std::max<size_t>(n, 2));
  std::vector<CallOutput> outputs;
  outputs.reserve(n);
  PhaseTimes unused;
  PhaseTimes& phases = batch.phases != nullptr ? *batch.phases : unused;
  // The region as copied out goes to the check whole, with no copy: the
  // output, then the combined LSE past the guard between them.
  // Checked on the device: the verdict, and the region only when it was
  // copied or the verdict asks for it (a mismatch or a damaged guard: the
  // CPU checker then re-checks and explains), which needs the call's buffers
  // intact (`recopy`: no later call of the batch replayed into them).
  // Called once the host has waited for the call's check.
  auto collect = [&](CallStaging& st, const CallInputs& in, CallBuffers& b, bool recopy = true) {
    PhaseClock clock;
    b.check_pending = false;
    std::optional<DeviceCheckResult> verdict;
    bool copied = !sh.device_check || in.copy_output;
    if (sh.device_check) {
      verdict = *static_cast<const DeviceCheckResult*>(st.check_result.data());
      DCP_CHECK(verdict->written == 1, HarnessError,
                "call {}: the device check completed without writing its result", in.op_idx);
      b.check_zeroed = true;  // the check completed: its last block zeroed the scratch
      // Test only: DCP_TEST_CHECKER_DISAGREE=1 skews the device's digest, so
      // every audited call disagrees (ci/gpu.sh check: exit 3).
      static const bool skew = [] {
        const char* e = std::getenv("DCP_TEST_CHECKER_DISAGREE");
        return e != nullptr && std::string(e) == "1";
      }();
      if (skew) verdict->digest ^= 1;
      const bool found = verdict->num_mismatches > 0 || verdict->guard_damaged != 0;
      if (!copied && recopy && found) {
        check(cudaMemcpy(st.output->data(), b.output.data(), region_of(sh, b).total_bytes(),
                         cudaMemcpyDeviceToHost),
              "copy output region out", false);
        copied = true;
      }
      if (!copied && verdict->guard_damaged != 0 && batch.out_of_bounds != nullptr) {
        batch.out_of_bounds->push_back(fmt::format(
            "call {}: a guard zone of the output region was overwritten (found by the device "
            "checker; the graph's buffers were replayed into again before they could be copied)",
            in.op_idx));
      }
    }
    if (copied) {
      check_guards(sh, in, st, batch.out_of_bounds);
      std::shared_ptr<PinnedBuffer> region = std::move(st.output);
      auto* bytes = static_cast<uint8_t*>(region->data());
      const std::span<uint8_t> out(bytes + guard_, sh.output_bytes);
      const std::span<uint8_t> lse(bytes + 2 * guard_ + sh.output_bytes, sh.lse_out_bytes);
      outputs.emplace_back(std::move(region), out, lse);
    } else {
      outputs.emplace_back();  // the staging keeps its lease for the next call
    }
    if (verdict) outputs.back().set_device_verdict(*verdict);
    clock.lap(phases.collect_ms);
  };
  tails_pending_ = false;
  auto wait = [&](bool last) {  // last: the batch's last wait, its tails copied first
    PhaseClock clock;
    if (last) enqueue_region_tails();
    sync_all();
    clock.lap(phases.wait_ms);
  };
  if (c.pressure > 0) start_pressure(c, sh, batch);
  const PressureScope pressure_scope(c.pressure > 0 ? pressure_.get() : nullptr);
  setup_clock.lap(phases.setup_ms);
  if (batch.mode == ExecMode::kEager) {
    // Each call is enqueued once the previous op is done. With the check
    // aside, calls alternate between two buffer sets and the host waits for
    // the op alone: call k's check runs beside call k + 1 and is collected
    // after k + 1 is enqueued.
    const bool overlap = sh.device_check && check_aside();
    for (size_t k = 0; k < n; ++k) {
      const CallInputs& in = batch.calls[k];
      const size_t set = overlap ? k % 2 : 0;
      setup_clock.restart();
      ensure(sh, eager_buffers_[set], staging_[set]);
      kick_memory_stress(c, 1);
      setup_clock.lap(phases.setup_ms);
      enqueue_call(sh, in, staging_[set], eager_buffers_[set], stream_for(in.slot), nullptr,
                   &phases);
      if (overlap && k > 0) {
        CallBuffers& prev = eager_buffers_[set ^ 1];
        PhaseClock clock;
        check(cudaEventSynchronize(prev.checked.get()), "wait for a check", true);
        clock.lap(phases.wait_ms);
        collect(staging_[set ^ 1], batch.calls[k - 1], prev);
      }
      if (overlap && k + 1 < n) {
        PhaseClock clock;
        sync_ops();
        clock.lap(phases.wait_ms);
        continue;
      }
      wait(k + 1 == n);
      collect(staging_[set], in, eager_buffers_[set]);
    }
  } else if (batch.mode == ExecMode::kPipelined) {
    if (pipe_buffers_.size() < n) pipe_buffers_.resize(n);
    setup_clock.restart();
    for (size_t i = 0; i < n; ++i) ensure(sh, pipe_buffers_[i], staging_[i]);
    kick_memory_stress(c, static_cast<int>(n));
    setup_clock.lap(phases.setup_ms);
    for (size_t i = 0; i < n; ++i) {
      enqueue_call(sh, batch.calls[i], staging_[i], pipe_buffers_[i],
                   stream_for(batch.calls[i].slot), nullptr, &phases);
    }
    wait(true);
    for (size_t i = 0; i < n; ++i) collect(staging_[i], batch.calls[i], pipe_buffers_[i]);
  } else {
    std::vector<CallBuffers*> used(n);
    for (size_t i = 0; i < n; ++i) {
      const CallInputs& in = batch.calls[i];
      DCP_CHECK(in.slot >= 0 && in.slot < kMaxSlots, HarnessError, "slot {} out of range", in.slot);
      const cudaStream_t s = stream_for(in.slot);
      bool cached = false;
      setup_clock.restart();
      SlotGraph& g = graph_for(sh, in.context, in.slot, staging_[i], &cached);
      setup_clock.lap(phases.setup_ms);
      bool& warmed = warmed_[static_cast<size_t>(in.context)][static_cast<size_t>(in.slot)];
      if (!cached) {
        if (!warmed && cfg_.kernel->info().has(DCP_CAP_EAGER_BEFORE_CAPTURE)) {
          // Every rank runs the case's calls in the same order, so this extra
          // call (its output discarded) lines up across the group too.
          enqueue_call(sh, in, staging_[i], g.buffers, s, nullptr, &phases);
          wait(false);
        }
        PhaseClock clock;
        capture(g, sh, make_launch(sh, in.slot, g.buffers), s, in.context);
        if (c.churn) churn_after_capture(sh, s);
        clock.lap(phases.capture_ms);
      }
      warmed = true;
      g.last_use = ++graph_uses_;
      enqueue_call(sh, in, staging_[i], g.buffers, s, g.exec.get(), &phases);
      used[i] = &g.buffers;
    }
    wait(true);
    for (size_t i = 0; i < n; ++i) {
      const bool reused = std::find(used.begin() + static_cast<std::ptrdiff_t>(i) + 1, used.end(),
                                    used[i]) != used.end();
      collect(staging_[i], batch.calls[i], *used[i], !reused);
    }
  }
  PhaseClock after_clock;
  if (pressure_ != nullptr) pressure_->stop();
  check_region_tails(batch.out_of_bounds);
  check_churn(batch.out_of_bounds);
  after_clock.lap(phases.after_ms);
  current_ = nullptr;
  return outputs;
}

void GpuBackend::kick_memory_stress(const Case& c, int calls) {
  if (!c.mstress) return;
  DCP_CHECK(pressure_allowed(c.mode), HarnessError,
            "memory stress needs eager or pipelined batches, not {}", to_string(c.mode));
  if (mstress_ == nullptr) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, cfg_.device), "cudaGetDeviceProperties", false);
    mstress_ = std::make_unique<MemoryStress>(
        cfg_.device, cfg_.global_rank, memory_stress_for(prop.name, memory_stress_cache_path()));
    spdlog::debug("rank {}: {}", cfg_.global_rank, mstress_->note());
  }
  mstress_->kick(calls);
}

// SM pressure (Case::pressure): every buffer of the batch is sized first, since
// a reallocation (cudaFree) would wait for the pressure kernel; then the
// pressure kernel takes its SMs before the first call.
void GpuBackend::start_pressure(const Case& c, const CallShape& sh, const Batch& batch) {
  DCP_CHECK(pressure_allowed(batch.mode), HarnessError,
            "SM pressure needs eager or pipelined batches, not {}", to_string(batch.mode));
  if (batch.mode == ExecMode::kEager) {
    for (size_t set = 0; set < eager_buffers_.size(); ++set) {
      ensure(sh, eager_buffers_[set], staging_[set]);
    }
  } else {
    if (pipe_buffers_.size() < batch.calls.size()) pipe_buffers_.resize(batch.calls.size());
    for (size_t i = 0; i < batch.calls.size(); ++i) ensure(sh, pipe_buffers_[i], staging_[i]);
  }
  if (pressure_ == nullptr) {
    pressure_ = std::make_unique<SmPressure>(cfg_.device, cfg_.global_rank, cfg_.spin_timeout_s);
  }
  // Before the pressure, one call (output discarded) for each kernel context
  // and variant (dtypes, producer) of the batch that no pressure batch has
  // seen: a kernel's first launches in a process may wait for every running
  // kernel (measured: the built-in's first op under pressure waited for the
  // pressure's whole bound). Every rank runs the same cases, so these extra
  // calls line up across the group (as eager-before-capture's do).
  CallBuffers& b = batch.mode == ExecMode::kEager ? eager_buffers_[0] : pipe_buffers_[0];
  for (const CallInputs& in : batch.calls) {
    const auto variant = std::make_tuple(in.context, static_cast<int>(sh.out),
                                         static_cast<int>(sh.lse), static_cast<int>(sh.producer));
    if (!pressure_warmed_.insert(variant).second) continue;
    enqueue_call(sh, in, staging_[0], b, stream_for(in.slot), nullptr, nullptr);
    sync_all();
  }
  sync_all();  // the buffers' first fills are done before the SMs are taken
  spdlog::debug("rank {}: {}", cfg_.global_rank, pressure_->start(c.pressure));
}

// Guard zones (guard_zone.h): the output's two guards came back with the
// output; a damaged one is reported and refilled before the next call anyway.
void GpuBackend::check_guards(const CallShape& sh, const CallInputs& in, const CallStaging& st,
                              std::vector<std::string>* out) const {
  const auto* g = static_cast<const uint8_t*>(st.output->data());  // the region, as copied out
  const uint8_t* after = g + guard_ + sh.output_bytes;
  std::string damage = describe_guard_damage("output", g, after, guard_);
  if (damage.empty() && sh.lse_out_bytes > 0) {
    damage = describe_guard_damage("combined_lse", nullptr, after + guard_ + sh.lse_out_bytes,
                                   guard_);
  }
  if (!damage.empty() && out != nullptr) out->push_back(fmt::format("call {}: {}", in.op_idx, damage));
}

// The tail past each payload region on this rank (peers write into it):
// compared after every batch, refilled when damaged.
size_t GpuBackend::region_tails_bytes() const {
  size_t total = 0;
  for (const KernelContext& k : contexts_) {
    for (const MappedRegion& m : k.regions) total += m.tail_guard;
  }
  return total;
}

void GpuBackend::enqueue_region_tails() {
  const size_t total = region_tails_bytes();
  if (total == 0) return;
  DCP_CHECK(total <= tails_host_.bytes(), HarnessError,
            "region tails of {} bytes, {} pinned for them", total, tails_host_.bytes());
  const cudaStream_t s0 = streams_[0].get();
  for (size_t i = 1; i < streams_.size(); ++i) {
    check(cudaEventRecord(joins_[i].get(), streams_[i].get()), "record a stream's work", false);
    check(cudaStreamWaitEvent(s0, joins_[i].get(), 0), "order the region tails' copy", false);
  }
  auto* to = static_cast<uint8_t*>(tails_host_.data());
  for (const KernelContext& k : contexts_) {
    for (const MappedRegion& m : k.regions) {
      if (m.tail_guard == 0) continue;
      const auto* tail = static_cast<const uint8_t*>(m.peers[cfg_.group_rank]) + m.request.bytes;
      check(cudaMemcpyAsync(to, tail, m.tail_guard, cudaMemcpyDeviceToHost, s0),
            "copy region tail", false);
      to += m.tail_guard;
    }
  }
  tails_pending_ = true;
}

void GpuBackend::check_region_tails(std::vector<std::string>* out) {
  if (!tails_pending_) {
    enqueue_region_tails();
    if (!tails_pending_) return;  // no payload region
    check(cudaStreamSynchronize(streams_[0].get()), "copy region tails", false);
  }
  tails_pending_ = false;
  const auto* from = static_cast<const uint8_t*>(tails_host_.data());
  bool refilled = false;
  for (const KernelContext& k : contexts_) {
    for (const MappedRegion& m : k.regions) {
      if (m.tail_guard == 0) continue;
      const std::string damage = describe_guard_damage(m.request.name, nullptr, from, m.tail_guard);
      from += m.tail_guard;
      if (damage.empty()) continue;
      if (out != nullptr) out->push_back(fmt::format("after the batch: {}", damage));
      uint8_t* tail = static_cast<uint8_t*>(m.peers[cfg_.group_rank]) + m.request.bytes;
      check(cudaMemsetAsync(tail, kGuardCanary, m.tail_guard, streams_[0].get()),
            "refill region tail", false);
      refilled = true;
    }
  }
  // On stream 0, waited for: the next batch's copy of the tails follows them.
  if (refilled) check(cudaStreamSynchronize(streams_[0].get()), "refill region tails", false);
}

// Allocation churn (alloc_churn.h), on the call's stream right after a capture.
void GpuBackend::churn_after_capture(const CallShape& sh, cudaStream_t s) {
  check(churn_.after_capture(sh.in_out_bytes + sh.in_lse_bytes + sh.output_bytes +
                                 sh.lse_out_bytes,
                             s),
        "allocate churn blocks", false);
}

// After each batch of a churn case: every live churn block still holds the canary.
void GpuBackend::check_churn(std::vector<std::string>* out) {
  if (churn_.empty()) return;
  check(churn_.damage(streams_[0].get(), out), "check churn blocks", false);
}

// ------------------------------------------------------------------- bench

std::vector<double> GpuBackend::bench(const Case& c, const Batch& batch, const BenchTiming& timing,
                                      const std::function<void()>& barrier) {
  const int rank = cfg_.global_rank;
  CUDA_CHECK(rank, HarnessError, cudaSetDevice(cfg_.device));
  DCP_CHECK(!batch.calls.empty() && timing.repeats >= 1 && timing.replays >= 1, HarnessError,
            "bench needs at least one call, repeat and replay");
  current_ = &c;
  const CallShape sh = shape_of(c, batch);
  const size_t k = batch.calls.size();
  const cudaStream_t s = stream_for(0);
  // One buffer set per op, so K ops read K distinct inputs (caches do not flatter).
  std::vector<CallBuffers> bufs(k);
  std::vector<CallStaging> st(k);
  for (size_t i = 0; i < k; ++i) {
    ensure(sh, bufs[i], st[i]);
    stage(sh, batch.calls[i], st[i]);
    enqueue_inputs(sh, batch.calls[i], st[i], bufs[i], s);
  }
  sync_all();
  // Declared after the buffers: destroyed first.
  GraphExec exec;
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture", false);
  cudaGraph_t graph = nullptr;
  try {
    for (size_t i = 0; i < k; ++i) enqueue_op(make_launch(sh, 0, bufs[i]), s, 0);
  } catch (...) {
    cudaStreamEndCapture(s, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  check(cudaStreamEndCapture(s, &graph), "end capture", true);
  cudaGraphExec_t raw = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&raw, graph, 0);
  cudaGraphDestroy(graph);
  check(err, "instantiate graph", true);
  exec.reset(raw);
  barrier();
  for (int w = 0; w < timing.warmup; ++w) check(cudaGraphLaunch(exec.get(), s), "warm-up", true);
  sync_all();
  Event start, stop;
  start.create(rank, cudaEventDefault);
  stop.create(rank, cudaEventDefault);
  std::vector<double> per_op_us;
  for (int rep = 0; rep < timing.repeats; ++rep) {
    barrier();  // every rank's stream is idle here: the repeat starts together
    check(cudaEventRecord(start.get(), s), "record start", false);
    for (int r = 0; r < timing.replays; ++r) check(cudaGraphLaunch(exec.get(), s), "replay", true);
    check(cudaEventRecord(stop.get(), s), "record stop", false);
    sync_all();
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.get(), stop.get()), "event elapsed", false);
    per_op_us.push_back(1e3 * ms / (static_cast<double>(timing.replays) * k));
  }
  current_ = nullptr;
  return per_op_us;
}

cudaStream_t GpuBackend::stream_for(int slot) const {
  if (slot < 0 || slot >= kMaxSlots) return streams_[0].get();
  return streams_[slot].get();
}

cudaStream_t GpuBackend::check_stream_for(int slot) const {
  if (slot < 0 || slot >= kMaxSlots) return check_streams_[0].get();
  return check_streams_[slot].get();
}

void GpuBackend::sync_ops() {
  for (const Stream& s : streams_) check(cudaStreamSynchronize(s.get()), "synchronize", true);
}

void GpuBackend::sync_all() {
  sync_ops();
  for (const Stream& s : check_streams_) check(cudaStreamSynchronize(s.get()), "synchronize", true);
}

void GpuBackend::check(cudaError_t err, const char* what, bool in_op) const {
  if (err == cudaSuccess) return;
  const std::string where =
      current_ != nullptr ? fmt::format(" in case {}", format_case_id(*current_)) : "";
  const std::string msg =
      fmt::format("rank {} (group rank {} of a DCP{} group): {} failed{}: {}; {}", cfg_.global_rank,
                  cfg_.group_rank, cfg_.dcp_size, what, where, cuda_error_text(err), status_text());
  if (in_op || is_device_fault(err))
    throw KernelFault(
        msg, cuda_failure_kind(err, status_host_ != nullptr && status_host_->trapped != 0));
  throw HarnessError(msg);
}

std::string GpuBackend::status_text() const {
  if (status_host_ == nullptr) return "no wait status";
  if (!cfg_.kernel->info().has(DCP_CAP_WAIT_STATUS)) {
    return fmt::format("kernel '{}' publishes no wait status (capability wait-status)",
                       cfg_.kernel->info().name);
  }
  const WaitStatus& s = *status_host_;
  std::string text;
  if (s.waiting != 0) {
    const int src = static_cast<int>(s.wait_source);
    const int src_rank = src < static_cast<int>(cfg_.members.size()) ? cfg_.members[src] : -1;
    text = fmt::format(
        "device was waiting for rank {} (slot {}, parity {}, epoch {}; flag holds "
        "{}){}",
        src_rank, s.wait_slot, s.wait_parity, s.wait_epoch, s.wait_flag_value,
        s.trapped != 0 ? ", then trapped" : "");
  } else {
    text = "device was not waiting on a flag";
  }
  auto per_slot = [](const volatile uint32_t* epochs) {
    std::string out;
    for (int i = 0; i < kMaxSlots; ++i) out += fmt::format("{}{}", i ? "," : "", epochs[i]);
    return out;
  };
  const std::string started =
      cfg_.kernel->info().has(DCP_CAP_LAUNCH_RECORD)
          ? fmt::format("last started [{}], ", per_slot(s.last_started_epoch))
          : std::string();
  const std::string pressure = pressure_ != nullptr && pressure_->running()
                                   ? fmt::format("; under {}", pressure_->note())
                                   : std::string();
  return fmt::format("{}; {}last signalled epoch per slot [{}], last completed [{}]{}", text,
                     started, per_slot(s.last_signalled_epoch),
                     per_slot(s.last_completed_epoch), pressure);
}

}  // namespace

std::unique_ptr<RankBackend> make_gpu_backend(const BackendConfig& cfg, Rendezvous& rendezvous) {
  return std::make_unique<GpuBackend>(cfg, rendezvous);
}

}  // namespace dcp
