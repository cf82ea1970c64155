// The GPU backend: set-up, the kernel's contexts and regions, begin_case,
// streams and errors. Its parts and how a call runs: gpu_backend_impl.h.
#include "gpu_backend.h"

#include "gpu_backend_impl.h"

namespace dcp::gpu_backend_detail {
namespace {

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

}  // namespace

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
  for (Event& e : joins_) e.create(rank);
  for (size_t i = 0; i < streams_.size(); ++i) {
    launch_observer::name_stream(streams_[i].get(), fmt::format("dcp{} slot {}", cfg_.dcp_size, i));
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

cudaStream_t GpuBackend::stream_for(int slot) const {
  if (slot < 0 || slot >= kMaxSlots) return streams_[0].get();
  return streams_[slot].get();
}

void GpuBackend::sync_all() {
  for (const Stream& s : streams_) check(cudaStreamSynchronize(s.get()), "synchronize", true);
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
}  // namespace dcp::gpu_backend_detail

namespace dcp {

std::unique_ptr<RankBackend> make_gpu_backend(const BackendConfig& cfg, Rendezvous& rendezvous) {
  return std::make_unique<gpu_backend_detail::GpuBackend>(cfg, rendezvous);
}

}  // namespace dcp
