#include "host_backend.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "errors.h"
#include "host_combine.h"
#include "host_mutants.h"
#include "kernel_instance.h"
#include "plan.h"
#include "plugin_services.h"
#include "shm_segment.h"
#include "status_board.h"
#include "suites.h"

namespace dcp {
namespace {

using Clock = std::chrono::steady_clock;

size_t page_bytes() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// One rank's receive buffers, identical in every segment of a group:
//   header page: epoch[kMaxSlots] (owner only), flags [kMaxSlots][2][W] u32 and
//                mutant-only step words [kMaxSlots][kHostMaxRanks] u32
//   lse  [kMaxSlots][2][W][max_tokens][H] fp32
//   out  [kMaxSlots][2][W][max_tokens][H][D] 16-bit out dtype
// Rows are innermost-but-one so a call with T tokens touches only T rows.
struct SegmentLayout {
  int num_ranks = 0, heads = 0, dim = 0, max_tokens = 0;
  static constexpr size_t kFlagsOffset = 256;
  // Step words: read and written only by the self-test mutants (never by the
  // correct model). step(owner, slot, peer) is the last epoch `peer` reported
  // to `owner` through the mutant's step barrier (see run_call).
  static constexpr size_t kStepsOffset = 1024;
  static_assert(kFlagsOffset + sizeof(uint32_t) * kMaxSlots * 2 * kHostMaxRanks <= kStepsOffset);
  // Hello words: written and read only by the unbounded-init-handshake mutant's
  // init. hello(owner)[peer] is 1 once `peer` said hello to `owner`.
  static constexpr size_t kHelloOffset = 2048;
  static_assert(kStepsOffset + sizeof(uint32_t) * kMaxSlots * kHostMaxRanks <= kHelloOffset);
  static_assert(kHelloOffset + sizeof(uint32_t) * kHostMaxRanks <= 4096);
  size_t lse_offset = 0, out_offset = 0, total_bytes = 0;

  SegmentLayout(const Geometry& g, int dcp_size)
      : num_ranks(dcp_size), heads(g.heads_per_rank), dim(g.head_dim), max_tokens(g.max_tokens) {
    const size_t rows = size_t{kMaxSlots} * 2 * num_ranks * max_tokens * heads;
    lse_offset = page_bytes();
    out_offset = align_up(lse_offset + rows * sizeof(float), page_bytes());
    total_bytes = align_up(out_offset + rows * dim * sizeof(uint16_t), page_bytes());
  }
  size_t flag_index(int slot, int parity, int src) const {
    return (static_cast<size_t>(slot) * 2 + parity) * num_ranks + src;
  }
  static size_t step_index(int slot, int peer) {
    return static_cast<size_t>(slot) * kHostMaxRanks + peer;
  }
  // `rows` per source: max_tokens (only the host-mapped-params mutant packs
  // fewer, within the slot's rows, as the kernel does within its slot region).
  size_t row_index(int slot, int parity, int src, int token, int head, int rows) const {
    const size_t slot_rows = static_cast<size_t>(slot) * 2 * num_ranks * max_tokens;
    const size_t source = static_cast<size_t>(parity) * num_ranks + src;
    return (slot_rows + source * rows + token) * heads + head;
  }
};

float load_lse(DType t, const uint8_t* row, size_t idx) {
  switch (t) {
    case DType::kFp32: {
      float v;
      std::memcpy(&v, row + idx * 4, 4);
      return v;
    }
    case DType::kFp16:
    case DType::kBf16: {
      uint16_t bits;
      std::memcpy(&bits, row + idx * 2, 2);
      return t == DType::kFp16 ? math::fp16_to_float(bits) : math::bf16_to_float(bits);
    }
  }
  return std::numeric_limits<float>::quiet_NaN();
}

// Backoff for the i-th failed poll of a bounded wait: CI runs 4 workers on 2
// cores, so a spinning rank must yield the CPU to the peer it waits for.
// Returns true when it slept (the caller then looks at its deadline).
bool back_off(uint64_t i) {
  if (i < 64) return false;
  if (i < 1024) {
    sched_yield();
    return false;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(i < 4096 ? 20 : 200));
  return true;
}

// For the single-parity mutant: whether the call before / after each op (in
// this rank's call order, which the plan fixes for every rank) uses the same
// slot of the same context.
struct SameSlotNeighbours {
  std::vector<char> prev, next;  // by op_idx
};

SameSlotNeighbours same_slot_neighbours(const Case& c, int group_rank) {
  SameSlotNeighbours n;
  n.prev.assign(num_ops(c), 0);
  n.next.assign(num_ops(c), 0);
  const PlannedCall* last = nullptr;
  for (const PlannedBatch& b : plan_case(c, group_rank)) {
    for (const PlannedCall& call : b.calls) {
      if (last != nullptr && last->slot == call.slot && last->context == call.context) {
        n.next[last->op_idx] = n.prev[call.op_idx] = 1;
      }
      last = &call;
    }
  }
  return n;
}

class HostBackend final : public RankBackend {
 public:
  HostBackend(const BackendConfig& config, Rendezvous& rendezvous);
  std::string name() const override { return "host"; }
  bool emits_combined_lse() const override { return true; }  // as the built-in kernel does
  void begin_case(const Case& c) override;
  // Without an init fault, a second context or an epoch restart, begin_case
  // only clears this rank's captured graphs.
  bool begin_case_is_local(const Case& c) const override {
    return c.init_fault == InitFault::kNone && c.num_contexts == 1 && !c.epoch_start.has_value();
  }
  std::vector<CallOutput> run_batch(const Case& c, const Batch& batch) override;

 private:
  void validate(const Case& c) const;
  // Creates and maps context `ctx`'s segments (a collective over the group).
  void map_context(int ctx, Rendezvous& rendezvous);
  // The model's init, after map_context(0): agreed across the group as a
  // plugin's init is (GroupInit), with this rank's injected fault if any.
  void init_model(const InitInjection& inject);
  void hello_handshake();  // the unbounded-init-handshake mutant only
  int note_call(ExecMode mode, int num_tokens, int slot);
  void run_call(const Case& c, const CallInputs& call, const SameSlotNeighbours* order,
                std::vector<uint8_t>& out);
  std::vector<int> dispatch(const Case& c, const CallInputs& call, int slot, int parity,
                            uint32_t epoch, bool after_same_slot);
  void copy_payload(const Case& c, const CallInputs& call, int dest, int slot, int parity);
  void wait_for_flags(int slot, int parity, uint32_t epoch);
  // Mutant-only step barrier (see run_call): tell every rank of the group that
  // this rank reached `epoch`'s step; wait, bounded, until `peer` told us.
  void post_step(int slot, uint32_t epoch);
  void wait_step(int slot, int peer, uint32_t epoch, const char* what);
  void wait_flag_value(int slot, int parity, int src, uint32_t value);
  void combine(const Case& c, int slot, int parity, std::vector<uint8_t>& out) const;
  // Whether this rank's wait takes flag value `v` as `epoch`'s arrival (only
  // v == epoch for the correct model), and whether a mutant's wait may take a
  // stale value (such writers defer their copy; see run_call).
  bool wait_accepts(uint32_t v, uint32_t epoch) const {
    switch (config_.mutant) {
      case kHostMutantStaleWait:
        return v != 0;
      case kHostMutantSignedEpochOrder:
        return static_cast<int32_t>(v) >= static_cast<int32_t>(epoch);
      default:
        return v == epoch;
    }
  }
  bool wait_accepts_stale() const {
    return config_.mutant == kHostMutantStaleWait || config_.mutant == kHostMutantSignedEpochOrder;
  }
  // Rank `rank`'s segment of the call's context (ctx_). The global-recv-buffers
  // mutant addresses this rank's own receive buffers through context 0's (a
  // process-wide singleton); flags and step words stay the context's.
  char* base(int rank) const { return segments_[ctx_][rank]->base(); }
  char* recv_base(int rank) const {
    const bool global = config_.mutant == kHostMutantGlobalRecvBuffers && rank == me_;
    return segments_[global ? 0 : ctx_][rank]->base();
  }
  std::atomic_ref<uint32_t> flag(int dest, int slot, int parity, int src) const {
    auto* flags = reinterpret_cast<uint32_t*>(base(dest) + SegmentLayout::kFlagsOffset);
    return std::atomic_ref<uint32_t>(flags[layout_.flag_index(slot, parity, src)]);
  }
  std::atomic_ref<uint32_t> step(int owner, int slot, int peer) const {
    auto* steps = reinterpret_cast<uint32_t*>(base(owner) + SegmentLayout::kStepsOffset);
    return std::atomic_ref<uint32_t>(steps[SegmentLayout::step_index(slot, peer)]);
  }
  uint32_t* own_epochs() const { return reinterpret_cast<uint32_t*>(base(me_)); }
  float* lse_of(int dest) const {
    return reinterpret_cast<float*>(recv_base(dest) + layout_.lse_offset);
  }
  uint16_t* out_of(int dest) const {
    return reinterpret_cast<uint16_t*>(recv_base(dest) + layout_.out_offset);
  }

  BackendConfig config_;
  SegmentLayout layout_;
  // The host model's CUDA graphs (a call of a graph batch captures unless its
  // slot captured that T in this case already; then it replays) and what a
  // kernel's call() leaves behind: the T each slot's last call (eager,
  // pipelined, or a capture, never a replay) was given. Only the
  // host-mapped-params mutant reads it (see note_call).
  // By context and slot, as the GPU keeps graphs and the mutant its host word.
  std::array<std::array<std::vector<int>, kMaxSlots>, kMaxContexts> captured_;
  std::array<std::array<int, kMaxSlots>, kMaxContexts> call_tokens_{};
  int call_rows_ = 0;  // receive rows per source of the call in progress
  bool in_graph_ = false;  // the call in progress is part of a graph batch
  int me_ = 0;  // group rank
  // Per kernel context (Case::num_contexts), by group rank ([ctx][me_] is
  // ours); context 1 is mapped by the first case that uses it.
  std::array<std::vector<std::unique_ptr<Segment>>, kMaxContexts> segments_;
  int ctx_ = 0;  // the context of the call in progress
  int inits_ = 0;  // init_model calls so far: names each agreement
  Rendezvous* rendezvous_ = nullptr;  // the worker's, outlives this backend
  WaitStatus local_status_{};  // used when no status board is given
  WaitStatus* status_ = nullptr;
};

HostBackend::HostBackend(const BackendConfig& config, Rendezvous& rendezvous)
    : config_(config), layout_(config.geometry, config.dcp_size), me_(config.group_rank) {
  status_ = config.status != nullptr ? config.status : &local_status_;
  DCP_CHECK(static_cast<int>(config.members.size()) == config.dcp_size, HarnessError,
            "host backend: {} members for dcp size {}", config.members.size(), config.dcp_size);
  rendezvous_ = &rendezvous;
  map_context(0, rendezvous);
  init_model({});
}

void HostBackend::init_model(const InitInjection& inject) {
  const BackendConfig& k = config_;
  GroupInit agreement(
      *rendezvous_,
      fmt::format("{}/host-g{}x{}/model-init{}", k.run_id, k.dcp_size, k.group_idx, inits_++),
      k.members, me_, nullptr);
  if (inject.fault == InitFault::kLate) {
    std::this_thread::sleep_for(std::chrono::milliseconds(inject.late_ms));
  }
  if (inject.fault == InitFault::kFail) {
    agreement.agree(DCP_STATUS_INTERNAL, injected_init_failure(), /*injected=*/true);
    return;  // not reached: agree throws the injected failure
  }
  if (k.mutant == kHostMutantUnboundedInitHandshake) hello_handshake();
  agreement.agree(DCP_STATUS_OK, "");
}

// The mistake: peers are awaited through the workspace, not the host
// services, and without a bound; a peer that never inits is waited for forever
// (the supervisor's deadline ends it, naming this rank inside init).
void HostBackend::hello_handshake() {
  auto hello = [this](int owner, int peer) {
    auto* words = reinterpret_cast<uint32_t*>(segments_[0][owner]->base() +
                                              SegmentLayout::kHelloOffset);
    return std::atomic_ref<uint32_t>(words[peer]);
  };
  const InKernelScope mark(config_.in_kernel, kInKernelInit);
  for (int p = 0; p < config_.dcp_size; ++p) hello(p, me_).store(1, std::memory_order_release);
  for (int p = 0; p < config_.dcp_size; ++p) {
    while (hello(me_, p).load(std::memory_order_acquire) != 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

// Each context's segments are checked against /dev/shm's free space as they are made.
void HostBackend::map_context(int ctx, Rendezvous& rendezvous) {
  const BackendConfig& config = config_;
  struct statvfs vfs {};
  if (statvfs("/dev/shm", &vfs) == 0) {
    const size_t free_bytes = static_cast<size_t>(vfs.f_bavail) * vfs.f_frsize;
    DCP_CHECK(layout_.total_bytes <= free_bytes, UsageError,
              "/dev/shm has {} MiB free but the host backend needs {} MiB per rank for this "
              "geometry: lower --max-tokens or enlarge /dev/shm",
              free_bytes >> 20, layout_.total_bytes >> 20);
  }
  const std::string suffix = ctx == 0 ? "" : kContextSegmentSuffix;
  const std::string tag = fmt::format("host-g{}x{}{}", config.dcp_size, config.group_idx, suffix);
  std::vector<std::unique_ptr<Segment>> peers(static_cast<size_t>(config.dcp_size));
  const std::string mine =
      host_segment_name(config.run_id, config.dcp_size, config.group_idx, config.global_rank) +
      suffix;
  peers[me_] = std::make_unique<Segment>(mine, layout_.total_bytes, /*create=*/true);
  auto names = rendezvous.allgather(tag + "-created", config.members, mine);
  for (int i = 0; i < config.dcp_size; ++i) {
    if (i == me_) continue;
    peers[i] = std::make_unique<Segment>(names[i], layout_.total_bytes, /*create=*/false);
  }
  // Every peer holds a mapping now: the names can go, the memory stays until unmapped.
  rendezvous.barrier(tag + "-mapped", config.members);
  peers[me_]->unlink_name();
  segments_[static_cast<size_t>(ctx)] = std::move(peers);  // only once complete
}

void HostBackend::validate(const Case& c) const {
  const Geometry& g = config_.geometry;
  DCP_CHECK(c.dcp_size == config_.dcp_size && c.geometry.heads_per_rank == g.heads_per_rank &&
                c.geometry.head_dim == g.head_dim && c.num_tokens >= 1 &&
                c.num_tokens <= g.max_tokens + 1 && c.num_slots >= 1 && c.num_slots <= kMaxSlots &&
                c.num_contexts >= 1 && c.num_contexts <= kMaxContexts,
            HarnessError, "host backend (dcp {}, h{} d{} m{}) cannot run case {}", config_.dcp_size,
            g.heads_per_rank, g.head_dim, g.max_tokens, format_case_id(c));
  DCP_CHECK(c.out_dtype != DType::kFp32, HarnessError,
            "host backend: output dtype must be fp16 or bf16");
}

void HostBackend::begin_case(const Case& c) {
  validate(c);
  if (c.init_fault != InitFault::kNone) {
    // A fresh segment: its epochs, flags and hello words start at 0.
    init_with_fault(
        c, me_, [this] { segments_[0].clear(); },
        [this](const InitInjection& inject) {
          map_context(0, *rendezvous_);
          init_model(inject);
        });
    restart_slot_records(*status_, 0);
    call_tokens_[0] = {};  // what the fresh context's call() left: nothing yet
  }
  for (auto& per_ctx : captured_) {
    for (auto& captured : per_ctx) captured.clear();  // a case captures its own graphs
  }
  // Between the group's barriers, on every rank alike: the collective mapping.
  for (int k = 1; k < c.num_contexts; ++k) {
    if (segments_[static_cast<size_t>(k)].empty()) map_context(k, *rendezvous_);
  }
  if (!c.epoch_start) return;
  // Quiescent (between two group barriers): every flag we receive is set to the
  // restarted epoch, so the next call (epoch + 1, either parity) cannot see a
  // stale flag equal to its own epoch, even across the 32-bit wrap.
  const uint32_t e = *c.epoch_start;
  for (ctx_ = 0; ctx_ < kMaxContexts; ++ctx_) {
    if (segments_[static_cast<size_t>(ctx_)].empty()) continue;
    for (int s = 0; s < kMaxSlots; ++s) {
      own_epochs()[s] = e;
      restart_slot_record(*status_, s, e);
      for (int p = 0; p < 2; ++p) {
        for (int src = 0; src < config_.dcp_size; ++src) flag(me_, s, p, src).store(e);
      }
      for (int peer = 0; peer < config_.dcp_size; ++peer) step(me_, s, peer).store(e);
    }
  }
  ctx_ = 0;
}

std::vector<CallOutput> HostBackend::run_batch(const Case& c, const Batch& batch) {
  validate(c);
  if (over_capacity(c)) {
    // The model's own capacity check, before any exchange. Its mutant accepts
    // the call and returns without exchanging (outputs left poisoned).
    if (config_.mutant != kHostMutantNoCapacityCheck) {
      DCP_THROW(KernelRefusal, "host model: T={} is over the workspace's max_tokens={}",
                c.num_tokens, config_.geometry.max_tokens);
    }
    const size_t bytes = output_bytes(c) + combined_lse_bytes(c);
    return owned_outputs(
        std::vector<std::vector<uint8_t>>(batch.calls.size(), std::vector<uint8_t>(bytes, 0xFF)),
        output_bytes(c));
  }
  SameSlotNeighbours order;
  if (config_.mutant == kHostMutantSingleParity) order = same_slot_neighbours(c, me_);
  std::vector<std::vector<uint8_t>> outputs(batch.calls.size());
  in_graph_ = batch.mode == ExecMode::kGraph;
  for (size_t i = 0; i < batch.calls.size(); ++i) {
    const int ctx = batch.calls[i].context;
    DCP_CHECK(ctx >= 0 && ctx < c.num_contexts && !segments_[static_cast<size_t>(ctx)].empty(),
              HarnessError, "call {} on context {} of {}", batch.calls[i].op_idx, ctx,
              c.num_contexts);
    ctx_ = ctx;
    call_rows_ = note_call(batch.mode, c.num_tokens, batch.calls[i].slot);
    run_call(c, batch.calls[i], config_.mutant == kHostMutantSingleParity ? &order : nullptr,
             outputs[i]);
  }
  return owned_outputs(std::move(outputs), output_bytes(c));
}

// Records a call in the graph model; returns the receive rows per source the
// call uses: max_tokens, or for the host-mapped-params mutant the T of the
// slot's last call() (clamped to the workspace), as a kernel that reads its
// token count from a host word written at call() time would: right for
// eager calls and one graph per slot, wrong for a replay after the slot
// captured a graph of fewer tokens.
int HostBackend::note_call(ExecMode mode, int num_tokens, int slot) {
  DCP_CHECK(slot >= 0 && slot < kMaxSlots, HarnessError, "call on slot {}", slot);
  std::vector<int>& captured = captured_[static_cast<size_t>(ctx_)][static_cast<size_t>(slot)];
  int& tokens = call_tokens_[static_cast<size_t>(ctx_)][static_cast<size_t>(slot)];
  const bool replay = mode == ExecMode::kGraph &&
                      std::find(captured.begin(), captured.end(), num_tokens) != captured.end();
  if (!replay) {
    if (mode == ExecMode::kGraph) captured.push_back(num_tokens);
    tokens = num_tokens;
  }
  if (config_.mutant != kHostMutantHostMappedParams) return layout_.max_tokens;
  return std::clamp(tokens, 1, layout_.max_tokens);
}

// The correct model: dispatch (payload, then flag, to every rank), wait for
// every rank's flag of this epoch, combine. No hook below runs unless a
// self-test mutant is selected.
//
// Each mutant forces, through the step words, the one interleaving that
// exposes it, so `selftest` catches it on every run and never by luck of timing
// (no sleeps). Every step wait depends only on flags or steps that the other
// ranks post without waiting on this rank, so no hook can deadlock.
//  - early-signal: dispatch stores the flags only; each reader combines, posts
//    "combined e" to every rank, and only then do the writers copy their
//    payloads (after that reader's step). Every reader combines a half its
//    writers have not written this epoch: zeros or a call two epochs old.
//  - stale-wait, signed-epoch-order: a writer whose flag word at a reader
//    already holds a value the mutant's wait accepts copies and signals only after
//    that reader's "combined e" step: the reader combines stale data. A rank
//    leaves the call only once every flag it receives holds e (no run-ahead).
//  - single-parity: a reader whose next call is on the same slot posts "seen
//    e" once its flags arrived, and a writer's next call on that slot writes
//    into a reader only after that step (so no flag moves past an epoch its
//    reader has not seen). Group rank 0 then waits until every peer's flag
//    holds e + 1 before it combines: it combines the peers' next payload,
//    which they wrote into the one half it was reading.
//  - unjoined-side-stream: group rank 0 (outside graph batches) copies only
//    its own rows before its combine; its sends to the peers follow once the
//    call returned, after the caller's reuse (Case::reuse) wrote NaN over the
//    inputs. The peers send at once, so rank 0's wait never needs its own sends.
// The inputs as the slow producer leaves them before its last token row: that
// row still holds the harness's poison (0xFF: NaN in every dtype).
CallInputs last_row_unproduced(const Case& c, const CallInputs& call) {
  CallInputs early = call;
  const size_t t = static_cast<size_t>(c.num_tokens) - 1;
  const size_t out_row = size_t{2} * static_cast<size_t>(c.out_token_stride());
  const size_t lse_row = (c.lse_dtype == DType::kFp32 ? size_t{4} : size_t{2}) *
                         static_cast<size_t>(c.lse_token_stride());
  std::fill_n(early.partial_output.begin() + static_cast<std::ptrdiff_t>(t * out_row), out_row,
              uint8_t{0xFF});
  std::fill_n(early.partial_lse.begin() + static_cast<std::ptrdiff_t>(t * lse_row), lse_row,
              uint8_t{0xFF});
  return early;
}

void HostBackend::run_call(const Case& c, const CallInputs& given, const SameSlotNeighbours* order,
                           std::vector<uint8_t>& out) {
  // The input producer (Case::producer) is, on the host, a step before the
  // dispatch: stream order, or under PDL the grid dependency wait, puts it
  // there. The mutant that skips the wait under PDL reads before its last row.
  CallInputs early;
  const bool reads_early =
      c.producer == Producer::kSlowPdl && config_.mutant == kHostMutantNoGridDependencyWait;
  if (reads_early) early = last_row_unproduced(c, given);
  const CallInputs& call = reads_early ? early : given;
  const int slot = call.slot;
  DCP_CHECK(slot >= 0 && slot < c.num_slots, HarnessError, "call on slot {} of {}", slot,
            c.num_slots);
  if (call.skew_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(call.skew_ns));
  // Poison: all-ones is a NaN in fp16, bf16 and fp32, so an unwritten element fails.
  out.assign(output_bytes(c) + combined_lse_bytes(c), 0xFF);
  const uint32_t epoch = ++own_epochs()[slot];
  status_->last_started_epoch[slot] = epoch;  // launch record (DCP_CAP_LAUNCH_RECORD)
  // Two parities: a rank cannot reuse a half before every peer has finished
  // reading it (it needs their next-epoch flags, sent only after their combine).
  const int parity = config_.mutant == kHostMutantSingleParity ? 0 : static_cast<int>(epoch & 1);
  const bool after_same_slot = order != nullptr && order->prev.at(call.op_idx);
  const bool before_same_slot = order != nullptr && order->next.at(call.op_idx);
  const std::vector<int> deferred = dispatch(c, call, slot, parity, epoch, after_same_slot);
  status_->last_signalled_epoch[slot] = epoch;
  wait_for_flags(slot, parity, epoch);
  if (before_same_slot) {  // single-parity only
    post_step(slot, epoch);
    if (me_ == 0) {
      for (int src = 1; src < config_.dcp_size; ++src) wait_flag_value(slot, parity, src, epoch + 1);
    }
  }
  combine(c, slot, parity, out);
  if (config_.mutant == kHostMutantEarlySignal || wait_accepts_stale()) {
    post_step(slot, epoch);
    for (int dest : deferred) {
      wait_step(slot, dest, epoch, "combined");
      copy_payload(c, call, dest, slot, parity);
      if (wait_accepts_stale()) {
        flag(dest, slot, parity, me_).store(epoch, std::memory_order_release);
      }
    }
    // stale waits: the call ends once every late copy into this rank landed, so
    // no rank runs ahead and the stale half holds exactly the data of epoch - 2.
    if (wait_accepts_stale()) {
      for (int src = 0; src < config_.dcp_size; ++src) wait_flag_value(slot, parity, src, epoch);
    }
  }
  if (config_.mutant == kHostMutantUnjoinedSideStream && !deferred.empty()) {
    // The call has returned: a caller that reuses its inputs overwrote them
    // with NaN (0xFF) on its stream, and the side stream's sends read them now.
    CallInputs reused = call;
    if (c.reuse) {
      std::fill(reused.partial_output.begin(), reused.partial_output.end(), uint8_t{0xFF});
      std::fill(reused.partial_lse.begin(), reused.partial_lse.end(), uint8_t{0xFF});
    }
    for (int dest : deferred) {
      copy_payload(c, reused, dest, slot, parity);
      flag(dest, slot, parity, me_).store(epoch, std::memory_order_release);
    }
  }
  status_->last_completed_epoch[slot] = epoch;
}

// Copies the payload to every rank and signals it; returns the ranks whose copy
// a mutant defers to after its combine (always empty for the correct model).
std::vector<int> HostBackend::dispatch(const Case& c, const CallInputs& call, int slot, int parity,
                                       uint32_t epoch, bool after_same_slot) {
  const int w = config_.dcp_size;
  std::vector<int> deferred;
  for (int k = 1; k <= w; ++k) {
    const int dest = (me_ + k) % w;  // start with the next rank: spreads contention
    auto f = flag(dest, slot, parity, me_);
    if (config_.mutant == kHostMutantEarlySignal) {
      f.store(epoch, std::memory_order_release);  // the flag, with no payload yet
      deferred.push_back(dest);
      continue;
    }
    if (config_.mutant == kHostMutantUnjoinedSideStream && me_ == 0 && !in_graph_ &&
        dest != me_) {
      deferred.push_back(dest);  // sent after the call returned (see run_call)
      continue;
    }
    // Only this rank writes f (and begin_case, while quiescent): a relaxed read is exact.
    if (wait_accepts_stale() && wait_accepts(f.load(std::memory_order_relaxed), epoch)) {
      deferred.push_back(dest);
      continue;
    }
    if (after_same_slot) wait_step(slot, dest, epoch - 1, "seen");  // single-parity only
    copy_payload(c, call, dest, slot, parity);
    f.store(epoch, std::memory_order_release);  // publishes the payload above
  }
  return deferred;
}

void HostBackend::post_step(int slot, uint32_t epoch) {
  for (int owner = 0; owner < config_.dcp_size; ++owner) {
    step(owner, slot, me_).store(epoch, std::memory_order_release);
  }
}

void HostBackend::wait_step(int slot, int peer, uint32_t epoch, const char* what) {
  const auto deadline =
      Clock::now() + std::chrono::microseconds(static_cast<int64_t>(config_.spin_timeout_s * 1e6));
  auto s = step(me_, slot, peer);
  for (uint64_t i = 1; s.load(std::memory_order_acquire) != epoch; ++i) {
    if (back_off(i) && Clock::now() > deadline) {
      DCP_FAULT(FailureKind::kHang,
                "host model (mutant {}): rank {} waited {} s for rank {} to report '{}' for "
                "slot {} epoch {} (step holds {})",
                config_.mutant, config_.global_rank, config_.spin_timeout_s,
                config_.members[peer], what, slot, epoch, s.load());
    }
  }
}

void HostBackend::wait_flag_value(int slot, int parity, int src, uint32_t value) {
  const auto deadline =
      Clock::now() + std::chrono::microseconds(static_cast<int64_t>(config_.spin_timeout_s * 1e6));
  auto f = flag(me_, slot, parity, src);
  for (uint64_t i = 1; f.load(std::memory_order_acquire) != value; ++i) {
    if (back_off(i) && Clock::now() > deadline) {
      DCP_FAULT(FailureKind::kHang,
                "host model (mutant {}): rank {} waited {} s for rank {}'s flag to reach {} on "
                "slot {} (it holds {})",
                config_.mutant, config_.global_rank, config_.spin_timeout_s,
                config_.members[src], value, slot, f.load());
    }
  }
}

void HostBackend::copy_payload(const Case& c, const CallInputs& call, int dest, int slot,
                               int parity) {
  const int h_count = layout_.heads, d_count = layout_.dim;
  const size_t out_stride = static_cast<size_t>(c.out_token_stride());
  const size_t lse_stride = static_cast<size_t>(c.lse_token_stride());
  const bool masking = !call.seq_lens.empty();
  // Converted to base 2 here, as the kernel's dispatch does (the mutant skips it).
  const bool base_e = c.lse_base == LseBase::kE && config_.mutant != kHostMutantNoBaseConversion;
  float* lse = lse_of(dest);
  uint16_t* out = out_of(dest);
  const auto* src_out = reinterpret_cast<const uint16_t*>(call.partial_output.data());
  for (int t = 0; t < c.num_tokens; ++t) {
    // An empty KV shard: its rows are garbage, so send -inf and never the payload.
    const bool masked =
        masking && math::token_masked(call.seq_lens.data(), call.query_start_loc.data(),
                                      static_cast<int>(call.seq_lens.size()), t);
    const uint8_t* lse_row =
        call.partial_lse.data() + t * lse_stride * (c.lse_dtype == DType::kFp32 ? 4 : 2);
    for (int h = 0; h < h_count; ++h) {
      const int head = dest * h_count + h;
      const size_t row = layout_.row_index(slot, parity, me_, t, h, call_rows_);
      lse[row] = masked ? math::neg_inf()
                        : math::lse_to_base2(load_lse(c.lse_dtype, lse_row, head), base_e);
      if (!masked) {
        std::memcpy(out + row * d_count,
                    src_out + t * out_stride + static_cast<size_t>(head) * d_count,
                    d_count * sizeof(uint16_t));
      }
    }
  }
}

void HostBackend::wait_for_flags(int slot, int parity, uint32_t epoch) {
  const auto deadline =
      Clock::now() + std::chrono::microseconds(static_cast<int64_t>(config_.spin_timeout_s * 1e6));
  for (int src = 0; src < config_.dcp_size; ++src) {
    auto f = flag(me_, slot, parity, src);
    auto arrived = [&](uint32_t v) { return wait_accepts(v, epoch); };
    uint32_t v = f.load(std::memory_order_acquire);
    if (arrived(v)) continue;
    status_->wait_source = static_cast<uint32_t>(src);
    status_->wait_slot = static_cast<uint32_t>(slot);
    status_->wait_parity = static_cast<uint32_t>(parity);
    status_->wait_epoch = epoch;
    status_->wait_flag_value = v;
    status_->waiting = 1;
    for (uint64_t i = 1; !arrived(v = f.load(std::memory_order_acquire)); ++i) {
      if (!back_off(i)) continue;
      status_->wait_flag_value = v;
      if (Clock::now() > deadline) {
        status_->wait_flag_value = f.load(std::memory_order_acquire);
        status_->trapped = 1;  // `waiting` stays set: the supervisor reports from it
        DCP_FAULT(FailureKind::kHang, "host model: {} for {} s: spin bound expired",
                  format_wait(*status_, config_.global_rank, config_.members[src]),
                  config_.spin_timeout_s);
      }
    }
    status_->waiting = 0;
  }
}

void HostBackend::combine(const Case& c, int slot, int parity, std::vector<uint8_t>& out) const {
  const int w = config_.dcp_size, h_count = layout_.heads, d_count = layout_.dim;
  const float* lse = lse_of(me_);
  const uint16_t* recv = out_of(me_);
  auto* dst = reinterpret_cast<uint16_t*>(out.data());
  const size_t out_bytes = output_bytes(c);
  float lses[kMaxDcpSize];
  const uint16_t* rows[kHostMaxRanks];
  for (int t = 0; t < c.num_tokens; ++t) {
    for (int h = 0; h < h_count; ++h) {
      for (int s = 0; s < w; ++s) {
        const size_t row = layout_.row_index(slot, parity, s, t, h, call_rows_);
        lses[s] = lse[row];
        rows[s] = recv + row * d_count;
      }
      uint16_t* o = dst + (static_cast<size_t>(t) * h_count + h) * d_count;
      if (c.out_dtype == DType::kBf16) {
        host_combine_row<ElemType::kBf16>(w, lses, rows, d_count, o);
      } else {
        host_combine_row<ElemType::kFp16>(w, lses, rows, d_count, o);
      }
      // The combined LSE after the output (emits_combined_lse), in the inputs'
      // base; its mutant leaves it in base 2.
      const bool base_e =
          c.lse_base == LseBase::kE && config_.mutant != kHostMutantCombinedLseBase2;
      const float l = math::combined_lse(lses, w, base_e);
      std::memcpy(out.data() + out_bytes + sizeof(float) * (static_cast<size_t>(t) * h_count + h),
                  &l, sizeof l);
    }
  }
}

}  // namespace

std::unique_ptr<RankBackend> make_host_backend(const BackendConfig& config,
                                               Rendezvous& rendezvous) {
  DCP_CHECK(config.dcp_size >= 2 && config.dcp_size <= kHostMaxRanks, HarnessError,
            "host backend: dcp size {} outside [2, {}]", config.dcp_size, kHostMaxRanks);
  return std::make_unique<HostBackend>(config, rendezvous);
}

std::string host_segment_name(const std::string& run_id, int dcp_size, int group_idx,
                              int global_rank) {
  return fmt::format("/dcp-check-{}-g{}x{}-r{}", run_id, dcp_size, group_idx, global_rank);
}

std::vector<std::string> host_segment_names(const std::string& run_id, int world) {
  std::vector<std::string> names;
  for (int g : dcp_sizes_for_world(world)) {
    for (int r = 0; r < world; ++r) {
      names.push_back(host_segment_name(run_id, g, r / g, r));
      names.push_back(host_segment_name(run_id, g, r / g, r) + kPluginSegmentSuffix);
      names.push_back(host_segment_name(run_id, g, r / g, r) + kContextSegmentSuffix);
      names.push_back(host_segment_name(run_id, g, r / g, r) + kPluginSegmentSuffix +
                      kContextSegmentSuffix);
    }
  }
  return names;
}

size_t host_segment_bytes(const Geometry& geometry, int dcp_size) {
  return SegmentLayout(geometry, dcp_size).total_bytes;
}

}  // namespace dcp
