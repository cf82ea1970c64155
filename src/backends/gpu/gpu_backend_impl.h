// The GPU backend's parts (gpu_backend.h is its interface): the buffers of
// one call, the class, and what its files share. The backend is split by
// what happens when:
//   gpu_backend.cpp        set-up, the kernel's contexts and regions, begin_case,
//                          streams, errors;
//   gpu_backend_call.cpp   one call: its shape, buffers, staging, the copy in,
//                          preparation, op (or graph replay) and device check;
//   gpu_backend_batch.cpp  a batch of calls per mode, collecting the verdicts
//                          and outputs, SM pressure, memory stress, guards;
//   gpu_backend_bench.cpp  the op alone, graph-replayed and timed (bench).
//
// Every call, whatever the mode, is the same sequence on one stream: one copy
// of the packed inputs in (from pinned staging), one preparation kernel
// (kernels/call_prep.h: partial_output written from its streams, the LSE and
// sequences put in their own buffers, the output poisoned with 0xFF bytes,
// NaN in fp16 and bf16, its guards filled), skew delay, the op (or a replay
// of the graph that captured it), then the device check and, for the CPU
// checker, the copy of the output out (a reuse case writes NaN over both
// inputs first, right after the op). With a slow producer
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
// whatever kernel the plugin seam holds (built-in or a library): the backend
// is the harness around it and never knows which.
#pragma once

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
#include "gpu_backend.h"
#include "guard_zone.h"
#include "input_producer.h"
#include "kernel_instance.h"
#include "mutants.h"
#include "launch_observer.h"
#include "memory_stress_host.h"
#include "sm_pressure_host.h"
#include "symmetric_memory.h"
#include "sync_mode.h"

namespace dcp::gpu_backend_detail {

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
  // What `enqueue` enqueues on `s`, captured and instantiated (the stream is
  // left usable when it throws).
  cudaGraphExec_t capture_graph(cudaStream_t s, const std::function<void()>& enqueue);
  // The context's slot's graph for shape `sh`: a cached one whose key matches, else
  // the least recently used one with its buffers ensured for `sh` (not captured).
  SlotGraph& graph_for(const CallShape& sh, int ctx, int slot, CallStaging& st, bool* cached);
  cudaStream_t stream_for(int slot) const;
  void sync_all();
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
  CallBuffers eager_buffers_;
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

}  // namespace dcp::gpu_backend_detail
