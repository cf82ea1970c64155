// The host harness for DCP_MEMORY_HOST plugins (host_backend.h). Layout of a
// rank's segment: every payload/control region in request order, each at its
// requested alignment (at least a page apart, so regions never share a page),
// identical on every rank; peers map each other's segment, so peers[i] points
// into rank i's copy.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "errors.h"
#include "guard_zone.h"
#include "host_backend.h"
#include "kernel_instance.h"
#include "shm_segment.h"

namespace dcp {
namespace {

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

struct HostRegion {
  dcpRegionRequest_v1 request;
  size_t offset = 0;  // in the segment (payload/control)
  size_t tail_guard = 0;  // payload: canary bytes past request.bytes (guard_zone.h)
  std::unique_ptr<uint8_t, decltype(&std::free)> local{nullptr, &std::free};  // local kind
  std::vector<void*> peers;
  std::vector<int64_t> peer_table;
};

// One kernel context: its segments, regions and instance (finalized first).
struct PluginContext {
  std::vector<std::unique_ptr<Segment>> segments;  // by group rank
  std::vector<HostRegion> regions;
  std::unique_ptr<KernelInstance> instance;
  ~PluginContext() { instance.reset(); }  // finalize before unmapping
};

class HostPluginBackend final : public RankBackend {
 public:
  HostPluginBackend(const BackendConfig& config, Rendezvous& rendezvous);

  std::string name() const override { return "host"; }
  bool emits_combined_lse() const override {
    return config_.kernel->info().has(DCP_CAP_COMBINED_LSE);
  }
  void begin_case(const Case& c) override;
  std::vector<CallOutput> run_batch(const Case& c, const Batch& batch) override;

 private:
  // Creates context `ctx` (a collective over the group: every rank, same point).
  void make_context(int ctx, Rendezvous& rendezvous, const InitInjection& inject = {});

  BackendConfig config_;
  // Context 0 from start-up, context 1 made by the first case that uses it.
  std::array<std::unique_ptr<PluginContext>, kMaxContexts> contexts_;
  Rendezvous* rendezvous_ = nullptr;  // the worker's, outlives this backend
  WaitStatus local_status_{};
  int inits_ = 0;  // contexts made so far: names each init's exchanges
};

HostPluginBackend::HostPluginBackend(const BackendConfig& config, Rendezvous& rendezvous)
    : config_(config), rendezvous_(&rendezvous) {
  make_context(0, rendezvous);
}

// Context k > 0 names its exchanges "/ctx<k>" and its segment with kContextSegmentSuffix.
void HostPluginBackend::make_context(int ctx, Rendezvous& rendezvous,
                                     const InitInjection& inject) {
  auto k = std::make_unique<PluginContext>();
  std::vector<std::unique_ptr<Segment>>& segments = k->segments;
  std::vector<HostRegion>& regions = k->regions;
  KernelGroup group =
      kernel_group(config_, -1, config_.status != nullptr ? config_.status : &local_status_);
  if (ctx > 0) group.key += fmt::format("/ctx{}", ctx);
  if (inits_++ > 0) group.key += fmt::format("/init{}", inits_);  // a context made again
  k->instance = std::make_unique<KernelInstance>(config_.kernel, group);
  const std::vector<dcpRegionRequest_v1> requests = k->instance->query_workspace(rendezvous);

  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t segment_bytes = 0;
  regions.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    regions[i].request = requests[i];
    if (requests[i].kind == DCP_REGION_LOCAL) continue;
    regions[i].offset = segment_bytes;
    if (requests[i].kind == DCP_REGION_PAYLOAD) regions[i].tail_guard = guard_bytes_for(0);
    segment_bytes = align_up(segment_bytes + requests[i].bytes + regions[i].tail_guard, page);
  }
  const int W = config_.dcp_size, me = config_.group_rank;
  segments.resize(W);
  if (segment_bytes > 0) {
    const std::string tag = group.key + "/segment";
    const std::string mine =
        host_segment_name(config_.run_id, W, config_.group_idx, config_.global_rank) +
        kPluginSegmentSuffix + (ctx > 0 ? kContextSegmentSuffix : "");
    segments[me] = std::make_unique<Segment>(mine, segment_bytes, /*create=*/true);  // zeroed
    const auto names = rendezvous.allgather(tag + "-created", config_.members, mine);
    for (int i = 0; i < W; ++i) {
      if (i != me) segments[i] = std::make_unique<Segment>(names[i], segment_bytes, false);
    }
    rendezvous.barrier(tag + "-mapped", config_.members);
    segments[me]->unlink_name();
  }
  std::vector<dcpRegion_v1> mapped;
  for (HostRegion& r : regions) {
    const dcpRegionRequest_v1& q = r.request;
    r.peers.assign(W, nullptr);
    if (q.kind == DCP_REGION_LOCAL) {
      const size_t align = std::max<size_t>(q.alignment == 0 ? 256 : q.alignment, sizeof(void*));
      r.local.reset(static_cast<uint8_t*>(std::aligned_alloc(align, align_up(q.bytes, align))));
      DCP_CHECK(r.local != nullptr, UsageError, "cannot allocate local region '{}' of {} bytes",
                q.name, q.bytes);
      std::memset(r.local.get(), 0, q.bytes);
      r.peers[me] = r.local.get();
    } else {
      for (int i = 0; i < W; ++i) r.peers[i] = segments[i]->base() + r.offset;
    }
    if (q.init == DCP_REGION_INIT_FILL)
      std::memset(r.peers[me], static_cast<int>(q.fill_byte), q.bytes);
    if (r.tail_guard > 0)
      std::memset(static_cast<uint8_t*>(r.peers[me]) + q.bytes, kGuardCanary, r.tail_guard);
    r.peer_table.assign(W, 0);
    for (int i = 0; i < W; ++i) r.peer_table[i] = reinterpret_cast<int64_t>(r.peers[i]);
    dcpRegion_v1 m{};
    m.struct_size = sizeof m;
    m.name = q.name;
    m.kind = q.kind;
    m.bytes = q.bytes;
    m.local = r.peers[me];
    m.peers = r.peers.data();
    m.peers_device = r.peer_table.data();
    m.peer_stride = 0;
    mapped.push_back(m);
  }
  // Fill bytes must be in place on every rank before any init may read a peer's.
  rendezvous.barrier(group.key + "/filled", config_.members);
  k->instance->init(mapped, rendezvous, inject);
  contexts_[static_cast<size_t>(ctx)] = std::move(k);
}

void HostPluginBackend::begin_case(const Case& c) {
  DCP_CHECK(c.dcp_size == config_.dcp_size, HarnessError,
            "case for a DCP group of {} sent to a backend of {}", c.dcp_size, config_.dcp_size);
  DCP_CHECK(c.num_contexts >= 1 && c.num_contexts <= kMaxContexts, HarnessError,
            "case {} asks for {} kernel contexts (at most {})", format_case_id(c), c.num_contexts,
            kMaxContexts);
  if (c.init_fault != InitFault::kNone) {
    init_with_fault(
        c, config_.group_rank, [this] { contexts_[0].reset(); },
        [this](const InitInjection& inject) { make_context(0, *rendezvous_, inject); });
    restart_slot_records(config_.status != nullptr ? *config_.status : local_status_, 0);
  }
  for (int k = 1; k < c.num_contexts; ++k) {
    if (contexts_[static_cast<size_t>(k)] == nullptr) make_context(k, *rendezvous_);
  }
  for (const auto& k : contexts_) {
    if (k == nullptr) continue;
    for (HostRegion& r : k->regions) {
      if (r.request.kind == DCP_REGION_PAYLOAD) {
        std::memset(r.peers[config_.group_rank], 0xFF, r.request.bytes);
      }
    }
    if (c.epoch_start.has_value()) {
      for (int slot = 0; slot < k->instance->config().num_slots; ++slot) {
        k->instance->set_epoch(slot, uint64_t{*c.epoch_start}, nullptr);
      }
    }
  }
}

std::vector<CallOutput> HostPluginBackend::run_batch(const Case& c, const Batch& batch) {
  const Geometry& g = config_.geometry;
  // max_tokens + 1 is the capacity case: the plugin's call must refuse it.
  DCP_CHECK(c.num_tokens >= 1 && c.num_tokens <= g.max_tokens + 1, UsageError,
            "{} tokens: must be in [1, max_tokens={}]", c.num_tokens, g.max_tokens);
  const size_t out_bytes = output_bytes(c);
  const size_t guard = guard_bytes_for(size_t{2} * g.heads_per_rank * g.head_dim);
  std::vector<std::vector<uint8_t>> outputs;
  outputs.reserve(batch.calls.size());
  // Case::reuse: the call reads copies of its inputs that the caller writes NaN
  // over (0xFF) as soon as it returns; they live until the batch ends.
  std::vector<std::vector<uint8_t>> reused;
  for (const CallInputs& in : batch.calls) {
    if (in.skew_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(in.skew_ns));
    // [guard | output | guard]; the output poisoned: unwritten elements are NaN.
    std::vector<uint8_t> guarded(out_bytes + 2 * guard, kGuardCanary);
    uint8_t* out = guarded.data() + guard;
    std::memset(out, 0xFF, out_bytes);
    dcpCallArgs_v1 a{};
    a.struct_size = sizeof a;
    a.stream = nullptr;
    a.slot = in.slot;
    a.num_tokens = c.num_tokens;
    if (c.reuse) {
      reused.push_back(in.partial_output);
      reused.push_back(in.partial_lse);
    }
    a.partial_output = c.reuse ? reused[reused.size() - 2].data() : in.partial_output.data();
    a.out_token_stride = c.out_token_stride();
    a.out_dtype = abi_dtype(c.out_dtype);
    a.partial_lse = c.reuse ? reused.back().data() : in.partial_lse.data();
    a.lse_token_stride = c.lse_token_stride();
    a.lse_dtype = abi_dtype(c.lse_dtype);
    a.lse_base = c.lse_base == LseBase::kE ? DCP_LSE_BASE_E : DCP_LSE_BASE_2;
    if (!in.seq_lens.empty()) {
      a.seq_lens = in.seq_lens.data();
      a.query_start_loc = in.query_start_loc.data();
      a.num_seqs = static_cast<int32_t>(in.seq_lens.size());
    }
    a.output = out;
    // [guard | combined LSE | guard], poisoned, when the plugin writes it.
    const bool with_lse = emits_combined_lse();
    const size_t lse_bytes = with_lse ? combined_lse_bytes(c) : 0;
    std::vector<uint8_t> guarded_lse(with_lse ? lse_bytes + 2 * guard : 0, kGuardCanary);
    if (with_lse) {
      std::memset(guarded_lse.data() + guard, 0xFF, lse_bytes);
      a.combined_lse = reinterpret_cast<float*>(guarded_lse.data() + guard);
    }
    a.timeout_ns = static_cast<uint64_t>(std::max(1e-3, config_.spin_timeout_s) * 1e9);
    DCP_CHECK(in.context >= 0 && in.context < kMaxContexts &&
                  contexts_[static_cast<size_t>(in.context)] != nullptr,
              HarnessError, "call {} on kernel context {}, which this rank has not created",
              in.op_idx, in.context);
    contexts_[static_cast<size_t>(in.context)]->instance->call(
        a, fmt::format("call {}", in.op_idx).c_str());
    if (c.reuse) {
      std::fill(reused[reused.size() - 2].begin(), reused[reused.size() - 2].end(), uint8_t{0xFF});
      std::fill(reused.back().begin(), reused.back().end(), uint8_t{0xFF});
    }
    std::string damage = describe_guard_damage("output", guarded.data(), out + out_bytes, guard);
    if (damage.empty() && with_lse) {
      damage = describe_guard_damage("combined_lse", guarded_lse.data(),
                                     guarded_lse.data() + guard + lse_bytes, guard);
    }
    if (!damage.empty() && batch.out_of_bounds != nullptr) {
      batch.out_of_bounds->push_back(fmt::format("call {}: {}", in.op_idx, damage));
    }
    outputs.emplace_back(out, out + out_bytes);
    if (with_lse) {
      outputs.back().insert(outputs.back().end(), guarded_lse.begin() + guard,
                            guarded_lse.begin() + guard + lse_bytes);
    }
  }
  // Peers write into this rank's payload regions: their tails after the batch.
  for (const auto& k : contexts_) {
    if (k == nullptr) continue;
    for (const HostRegion& r : k->regions) {
      if (r.tail_guard == 0) continue;
      uint8_t* tail = static_cast<uint8_t*>(r.peers[config_.group_rank]) + r.request.bytes;
      const std::string damage = describe_guard_damage(r.request.name, nullptr, tail, r.tail_guard);
      if (damage.empty()) continue;
      if (batch.out_of_bounds != nullptr) {
        batch.out_of_bounds->push_back(fmt::format("after the batch: {}", damage));
      }
      std::memset(tail, kGuardCanary, r.tail_guard);
    }
  }
  return owned_outputs(std::move(outputs), out_bytes);
}

}  // namespace

std::unique_ptr<RankBackend> make_host_plugin_backend(const BackendConfig& config,
                                                      Rendezvous& rendezvous) {
  return std::make_unique<HostPluginBackend>(config, rendezvous);
}

}  // namespace dcp
