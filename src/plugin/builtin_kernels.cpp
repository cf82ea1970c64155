#include "builtin_kernels.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "direct_a2a.h"
#include "errors.h"
#include "gpu_stock.h"
#include "mutants.h"
#include "plugin_services.h"

namespace dcp {
namespace {

thread_local std::string t_last_error;  // failures before a context exists

dcpStatus_t fail(std::string* where, dcpStatus_t status, std::string message) {
  *where = std::move(message);
  return status;
}

ElemType elem_of(int32_t d) {
  return d == DCP_DTYPE_FP16   ? ElemType::kFp16
         : d == DCP_DTYPE_BF16 ? ElemType::kBf16
                               : ElemType::kFp32;
}

const dcpRegion_v1* find_region(const dcpRegion_v1* regions, int32_t n, const char* name) {
  for (int i = 0; i < n; ++i) {
    if (std::strcmp(regions[i].name, name) == 0) return &regions[i];
  }
  return nullptr;
}

// ------------------------------------------------------------------ direct

// global-recv-buffers only: this rank's own receive workspace, one per
// (group, shape) in the process, set by the first context's init and released
// by that context's finalize (the mistake: two contexts of one group share it).
std::mutex g_recv_mutex;
std::map<std::string, uint8_t*> g_recv_singleton;

struct DirectContext {
  DirectWorkspaceLayout layout;
  std::array<uint8_t*, kMaxDcpSize> workspace{};  // every group rank's, as mapped here
  DirectSlotState* states = nullptr;
  WaitStatus* status = nullptr;
  std::array<int32_t, kMaxDcpSize> members{};
  int group_rank = 0;
  int mutant = kMutantNone;
  // host-mapped-params only: one word per slot in mapped pinned host memory,
  // set to T by call() (host pointer) and read by the kernels (device pointer).
  int32_t* host_tokens = nullptr;
  int32_t* host_tokens_dev = nullptr;
  // unjoined-side-stream only: each slot's side stream and its fork/join events.
  std::array<DirectSideStream, kMaxSlots> side{};
  // global-recv-buffers only: the singleton's key, whether this context set
  // it, and the own receive workspace the calls use (the singleton's).
  std::string recv_key;
  bool recv_owner = false;
  uint8_t* own_recv = nullptr;
  // resized-staging only: each slot's staging block (from the device's pool)
  // and the internal stream that allocates and frees them.
  std::array<std::pair<void*, size_t>, kMaxSlots> staging{};
  cudaStream_t pool_stream = nullptr;
  std::string error;

  DirectContext() = default;
  DirectContext(const DirectContext&) = delete;
  DirectContext& operator=(const DirectContext&) = delete;
  ~DirectContext() {
    if (host_tokens != nullptr) cudaFreeHost(host_tokens);
    for (DirectSideStream& s : side) {
      if (s.join != nullptr) cudaEventDestroy(s.join);
      if (s.fork != nullptr) cudaEventDestroy(s.fork);
      if (s.stream != nullptr) cudaStreamDestroy(s.stream);
    }
    for (const auto& [block, bytes] : staging) {
      if (block != nullptr) cudaFreeAsync(block, pool_stream);
    }
    if (pool_stream != nullptr) {
      cudaStreamSynchronize(pool_stream);
      cudaStreamDestroy(pool_stream);
    }
    if (recv_owner) {
      const std::lock_guard<std::mutex> lock(g_recv_mutex);
      g_recv_singleton.erase(recv_key);
    }
  }
};

DirectWorkspaceLayout direct_layout(const dcpGroupConfig_v1& c) {
  DirectWorkspaceLayout l;
  l.dcp_size = c.group_size;
  l.max_tokens = c.max_tokens;
  l.heads_per_rank = c.heads_per_rank;
  l.head_dim = c.head_dim;
  l.num_slots = kMaxSlots;
  return l;
}

dcpStatus_t direct_get_workspace(const dcpGroupConfig_v1* c, dcpRegionRequest_v1* r, int32_t cap,
                                 int32_t* n) {
  if (c->group_size < 2 || c->group_size > kMaxDcpSize || c->head_dim % 8 != 0 || cap < 2) {
    return fail(&t_last_error, DCP_STATUS_UNSUPPORTED,
                fmt::format("direct: W={} D={} not supported (W <= {}, D a multiple of 8)",
                            c->group_size, c->head_dim, kMaxDcpSize));
  }
  // One symmetric region holding every slot's receive buffers and flags
  // (DirectWorkspaceLayout), and the per-slot state in local memory.
  std::snprintf(r[0].name, sizeof r[0].name, "workspace");
  r[0].bytes = direct_layout(*c).total_bytes();
  r[0].alignment = 256;
  r[0].kind = DCP_REGION_CONTROL;
  r[0].init = DCP_REGION_INIT_ZERO;
  std::snprintf(r[1].name, sizeof r[1].name, "slot-state");
  r[1].bytes = sizeof(DirectSlotState) * kMaxSlots;
  r[1].alignment = 256;
  r[1].kind = DCP_REGION_LOCAL;
  r[1].init = DCP_REGION_INIT_ZERO;
  *n = 2;
  if (c->mutant != nullptr && std::string_view(c->mutant) == "unbounded-init-handshake" &&
      cap >= 3) {
    // unbounded-init-handshake only: one hello word per group rank.
    std::snprintf(r[2].name, sizeof r[2].name, "init-hello");
    r[2].bytes = sizeof(uint32_t) * kMaxDcpSize;
    r[2].alignment = 256;
    r[2].kind = DCP_REGION_CONTROL;
    r[2].init = DCP_REGION_INIT_ZERO;
    *n = 3;
  }
  return DCP_STATUS_OK;
}

// unbounded-init-handshake: hello into every peer's word for this rank, then
// poll this rank's words until every peer's hello is there. The mistake: no
// bound and no host service, so a peer that never inits is waited for forever.
dcpStatus_t hello_handshake(const dcpRegion_v1& hello, int group_rank, int group_size) {
  const uint32_t one = 1;
  for (int i = 0; i < group_size; ++i) {
    void* word = static_cast<uint32_t*>(hello.peers[i]) + group_rank;
    if (cudaMemcpy(word, &one, sizeof one, cudaMemcpyDefault) != cudaSuccess) {
      return fail(&t_last_error, DCP_STATUS_CUDA_ERROR, "direct: cannot say hello");
    }
  }
  std::array<uint32_t, kMaxDcpSize> seen{};
  while (true) {
    if (cudaMemcpy(seen.data(), hello.local, sizeof(uint32_t) * group_size, cudaMemcpyDefault) !=
        cudaSuccess) {
      return fail(&t_last_error, DCP_STATUS_CUDA_ERROR, "direct: cannot read the hellos");
    }
    if (std::all_of(seen.begin(), seen.begin() + group_size, [](uint32_t v) { return v == 1; })) {
      return DCP_STATUS_OK;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

dcpStatus_t direct_init(const dcpGroupConfig_v1* c, const dcpRegion_v1* regions, int32_t n,
                        const dcpHostServices_v1*, void** out) {
  auto ctx = std::make_unique<DirectContext>();
  ctx->layout = direct_layout(*c);
  ctx->group_rank = c->group_rank;
  ctx->status = c->wait_status;
  const dcpRegion_v1* ws = find_region(regions, n, "workspace");
  const dcpRegion_v1* st = find_region(regions, n, "slot-state");
  if (ws == nullptr || st == nullptr) {
    return fail(&t_last_error, DCP_STATUS_INVALID_ARGUMENT, "direct: regions missing");
  }
  for (int i = 0; i < c->group_size; ++i) {
    ctx->workspace[i] = static_cast<uint8_t*>(ws->peers[i]);
    ctx->members[i] = c->members[i];
  }
  ctx->states = static_cast<DirectSlotState*>(st->local);
  if (c->mutant != nullptr) {
    const GpuMutantInfo* m = find_gpu_mutant(std::string_view(c->mutant));
    if (m == nullptr) {
      return fail(&t_last_error, DCP_STATUS_INVALID_ARGUMENT,
                  fmt::format("direct: no mutant named '{}'", c->mutant));
    }
    ctx->mutant = m->id;
  }
  if (ctx->mutant == kMutantGlobalRecvBuffers) {
    const auto members = ctx->members.begin();
    ctx->recv_key = fmt::format("{}/{}/{}x{}x{}x{}", c->group_rank,
                                fmt::join(members, members + c->group_size, ","), c->group_size,
                                c->max_tokens, c->heads_per_rank, c->head_dim);
    const std::lock_guard<std::mutex> lock(g_recv_mutex);
    const auto [it, inserted] =
        g_recv_singleton.emplace(ctx->recv_key, ctx->workspace[ctx->group_rank]);
    ctx->recv_owner = inserted;
    ctx->own_recv = it->second;
  }
  if (ctx->mutant == kMutantUnboundedInitHandshake) {
    const dcpRegion_v1* hello = find_region(regions, n, "init-hello");
    if (hello == nullptr) {
      return fail(&t_last_error, DCP_STATUS_INVALID_ARGUMENT, "direct: region init-hello missing");
    }
    if (const dcpStatus_t st = hello_handshake(*hello, c->group_rank, c->group_size);
        st != DCP_STATUS_OK) {
      return st;
    }
  }
  if (ctx->mutant == kMutantResizedStaging) {
    // Freed blocks stay with the pool (mapped) until someone allocates them.
    cudaMemPool_t pool = nullptr;
    uint64_t keep_all = UINT64_MAX;
    if (cudaDeviceGetDefaultMemPool(&pool, c->device) != cudaSuccess ||
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all) !=
            cudaSuccess ||
        cudaStreamCreateWithFlags(&ctx->pool_stream, cudaStreamNonBlocking) != cudaSuccess) {
      return fail(&t_last_error, DCP_STATUS_CUDA_ERROR, "direct: cannot set up the staging pool");
    }
  }
  if (ctx->mutant == kMutantHostMappedParams) {
    void* host = nullptr;
    void* dev = nullptr;
    if (cudaHostAlloc(&host, sizeof(int32_t) * kMaxSlots, cudaHostAllocMapped) != cudaSuccess) {
      return fail(&t_last_error, DCP_STATUS_CUDA_ERROR, "direct: cannot map the host words");
    }
    ctx->host_tokens = static_cast<int32_t*>(host);
    std::memset(host, 0, sizeof(int32_t) * kMaxSlots);
    if (cudaHostGetDevicePointer(&dev, host, 0) != cudaSuccess) {
      return fail(&t_last_error, DCP_STATUS_CUDA_ERROR, "direct: cannot map the host words");
    }
    ctx->host_tokens_dev = static_cast<int32_t*>(dev);
  }
  if (ctx->mutant == kMutantUnjoinedSideStream) {
    for (DirectSideStream& s : ctx->side) {
      if (cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking) != cudaSuccess ||
          cudaEventCreateWithFlags(&s.fork, cudaEventDisableTiming) != cudaSuccess ||
          cudaEventCreateWithFlags(&s.join, cudaEventDisableTiming) != cudaSuccess) {
        return fail(&t_last_error, DCP_STATUS_CUDA_ERROR, "direct: cannot create the side streams");
      }
    }
  }
  *out = ctx.release();
  return DCP_STATUS_OK;
}

// resized-staging: the combine writes the slot's staging block, copied to
// the output after it. The mistake: the block is sized to the call's T, and a
// call of another T gives the old one back to the pool while graphs captured
// with it still write it.
dcpStatus_t staged_call(DirectContext& ctx, DirectA2AParams& p, void* output,
                        cudaStream_t stream) {
  auto& [block, capacity] = ctx.staging[static_cast<size_t>(p.slot)];
  const size_t bytes = size_t{2} * p.num_tokens * p.heads_per_rank * p.head_dim;
  if (bytes != capacity) {
    // On the internal stream, outside any capture of the caller's stream.
    // The new block first, then the old one back to the pool.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    void* grown = nullptr;
    const cudaError_t err = cudaMallocAsync(&grown, bytes, ctx.pool_stream);
    if (err == cudaSuccess && block != nullptr) cudaFreeAsync(block, ctx.pool_stream);
    cudaStreamSynchronize(ctx.pool_stream);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (err != cudaSuccess) {
      return fail(&ctx.error, DCP_STATUS_CUDA_ERROR, "direct: cannot resize the staging block");
    }
    block = grown;
    capacity = bytes;
  }
  p.output = block;
  cudaError_t err = launch_direct_a2a(p, stream);  // the kernels are the correct ones
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(output, block, bytes, cudaMemcpyDeviceToDevice, stream);
  }
  if (err != cudaSuccess) {
    return fail(&ctx.error, DCP_STATUS_CUDA_ERROR,
                fmt::format("direct: launch failed: {}", cudaGetErrorString(err)));
  }
  return DCP_STATUS_OK;
}

dcpStatus_t direct_call(void* context, const dcpCallArgs_v1* a) {
  auto* ctx = static_cast<DirectContext*>(context);
  const DirectWorkspaceLayout& l = ctx->layout;
  DirectA2AParams p;
  std::memset(&p, 0, sizeof p);
  p.partial_output = a->partial_output;
  p.partial_lse = a->partial_lse;
  p.out_token_stride = a->out_token_stride;
  p.lse_token_stride = a->lse_token_stride;
  p.out_dtype = elem_of(a->out_dtype);
  p.lse_dtype = elem_of(a->lse_dtype);
  p.lse_base_e = a->lse_base == DCP_LSE_BASE_E ? 1 : 0;
  p.pdl = DCP_CALL_HAS_FLAGS(a) && (a->flags & DCP_CALL_PDL) != 0 ? 1 : 0;
  p.num_tokens = a->num_tokens;
  p.dcp_size = l.dcp_size;
  p.heads_per_rank = l.heads_per_rank;
  p.head_dim = l.head_dim;
  p.max_tokens = l.max_tokens;
  p.group_rank = ctx->group_rank;
  p.slot = a->slot;
  if (a->slot < 0 || a->slot >= kMaxSlots) {
    return fail(&ctx->error, DCP_STATUS_INVALID_ARGUMENT,
                fmt::format("slot {} out of range", a->slot));
  }
  for (int i = 0; i < l.dcp_size; ++i) {
    p.members[i] = ctx->members[i];
    p.out_recv[i] = ctx->workspace[i] + l.out_offset(a->slot);
    p.lse_recv[i] = reinterpret_cast<float*>(ctx->workspace[i] + l.lse_offset(a->slot));
    p.flags[i] = reinterpret_cast<uint32_t*>(ctx->workspace[i] + l.flags_offset(a->slot));
  }
  if (ctx->own_recv != nullptr) {
    // The mistake: this rank's own receive buffers from the process-wide
    // singleton, not from the context's workspace (its flags stay its own).
    p.out_recv[ctx->group_rank] = ctx->own_recv + l.out_offset(a->slot);
    p.lse_recv[ctx->group_rank] = reinterpret_cast<float*>(ctx->own_recv + l.lse_offset(a->slot));
  }
  p.seq_lens = a->seq_lens;
  p.query_start_loc = a->query_start_loc;
  p.num_seqs = a->num_seqs;
  p.state = ctx->states + a->slot;
  p.state_slot0 = ctx->states;
  p.output = a->output;
  p.combined_lse = a->combined_lse;
  p.status = ctx->status;
  p.spin_timeout_ns = a->timeout_ns;
  if (ctx->host_tokens != nullptr) {
    // The mistake: a parameter of the call kept in host memory the kernels
    // read when they run, which a graph replay does not rewrite.
    *static_cast<volatile int32_t*>(ctx->host_tokens + a->slot) = a->num_tokens;
    p.host_tokens = ctx->host_tokens_dev + a->slot;
  }
  if (const std::string why = validate_direct_params(p, ctx->mutant); !why.empty()) {
    return fail(&ctx->error, DCP_STATUS_INVALID_ARGUMENT, "direct: " + why);
  }
  const auto stream = static_cast<cudaStream_t>(a->stream);
  if (ctx->mutant == kMutantResizedStaging) return staged_call(*ctx, p, a->output, stream);
  const cudaError_t err = ctx->mutant != kMutantNone
                              ? launch_direct_a2a_mutant(p, ctx->mutant, stream,
                                                         &ctx->side[static_cast<size_t>(a->slot)])
                              : launch_direct_a2a(p, stream);
  if (err != cudaSuccess) {
    return fail(&ctx->error, DCP_STATUS_CUDA_ERROR,
                fmt::format("direct: launch failed: {} ({})", cudaGetErrorName(err),
                            cudaGetErrorString(err)));
  }
  return DCP_STATUS_OK;
}

dcpStatus_t direct_set_epoch(void* context, int32_t slot, uint64_t epoch, void* stream) {
  auto* ctx = static_cast<DirectContext*>(context);
  if (slot < 0 || slot >= kMaxSlots) {
    return fail(&ctx->error, DCP_STATUS_INVALID_ARGUMENT,
                fmt::format("slot {} out of range", slot));
  }
  const cudaError_t err =
      reset_direct_slot(ctx->workspace[ctx->group_rank], ctx->layout, ctx->states, slot,
                        static_cast<uint32_t>(epoch), static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess) {
    return fail(&ctx->error, DCP_STATUS_CUDA_ERROR,
                fmt::format("direct: set_epoch failed: {}", cudaGetErrorString(err)));
  }
  return DCP_STATUS_OK;
}

// ------------------------------------------------------------------- stock

struct StockContext {
  // One communicator per slot: each slot's stream has its own NCCL issue order.
  std::vector<std::unique_ptr<StockTransport>> slots;
  int max_tokens = 0;  // its send and receive buffers hold this many tokens
  std::string error;
};

dcpStatus_t stock_get_workspace(const dcpGroupConfig_v1*, dcpRegionRequest_v1*, int32_t,
                                int32_t* n) {
  *n = 0;  // NCCL brings its own buffers
  return DCP_STATUS_OK;
}

dcpStatus_t stock_init(const dcpGroupConfig_v1* c, const dcpRegion_v1*, int32_t,
                       const dcpHostServices_v1* services, void** out) {
  try {
    auto ctx = std::make_unique<StockContext>();
    ServicesRendezvous rendezvous(*services, c->group_size);
    StockConfig sc;
    sc.global_rank = c->global_rank;
    sc.group_rank = c->group_rank;
    sc.members.assign(c->members, c->members + c->group_size);
    sc.device = c->device;
    sc.max_tokens = c->max_tokens;
    ctx->max_tokens = c->max_tokens;
    sc.heads_per_rank = c->heads_per_rank;
    sc.head_dim = c->head_dim;
    for (int s = 0; s < c->num_slots; ++s) {
      sc.key_prefix = fmt::format("stock-slot{}", s);
      ctx->slots.push_back(std::make_unique<StockTransport>(sc, rendezvous));
    }
    *out = ctx.release();
    return DCP_STATUS_OK;
  } catch (const UsageError& e) {
    return fail(&t_last_error, DCP_STATUS_UNSUPPORTED, e.what());
  } catch (const std::exception& e) {
    return fail(&t_last_error, DCP_STATUS_INTERNAL, e.what());
  }
}

dcpStatus_t stock_call(void* context, const dcpCallArgs_v1* a) {
  auto* ctx = static_cast<StockContext*>(context);
  if (a->slot < 0 || a->slot >= static_cast<int>(ctx->slots.size())) {
    return fail(&ctx->error, DCP_STATUS_INVALID_ARGUMENT,
                fmt::format("slot {} out of range", a->slot));
  }
  if (a->num_tokens < 1 || a->num_tokens > ctx->max_tokens) {
    return fail(&ctx->error, DCP_STATUS_INVALID_ARGUMENT,
                fmt::format("stock: {} tokens are over the buffers' capacity (max_tokens {})",
                            a->num_tokens, ctx->max_tokens));
  }
  try {
    StockPackParams pack;
    StockCombineParams combine;
    std::memset(&pack, 0, sizeof pack);
    std::memset(&combine, 0, sizeof combine);
    StockTransport& t = *ctx->slots[a->slot];
    t.fill_params(a->num_tokens, a->partial_output, a->partial_lse, a->out_token_stride,
                  a->lse_token_stride, elem_of(a->out_dtype), elem_of(a->lse_dtype),
                  a->lse_base == DCP_LSE_BASE_E, a->seq_lens, a->query_start_loc, a->num_seqs,
                  a->output, &pack, &combine);
    t.enqueue(pack, combine, static_cast<cudaStream_t>(a->stream));
    return DCP_STATUS_OK;
  } catch (const UsageError& e) {
    return fail(&ctx->error, DCP_STATUS_INVALID_ARGUMENT, e.what());
  } catch (const std::exception& e) {
    return fail(&ctx->error, DCP_STATUS_CUDA_ERROR, e.what());
  }
}

// ------------------------------------------------------------------ common

template <typename Context>
dcpStatus_t finalize(void* context) {
  delete static_cast<Context*>(context);
  return DCP_STATUS_OK;
}

template <typename Context>
const char* last_error(void* context) {
  return context != nullptr ? static_cast<Context*>(context)->error.c_str() : t_last_error.c_str();
}

std::vector<dcpMutantInfo_v1> direct_mutant_table() {
  std::vector<dcpMutantInfo_v1> out;
  for (const GpuMutantInfo& m : kGpuMutants) {
    out.push_back({m.name.data(), m.description.data()});  // string literals: NUL-terminated
  }
  return out;
}
const std::vector<dcpMutantInfo_v1> kDirectMutants = direct_mutant_table();

constexpr uint32_t kOutDtypes = DCP_DTYPE_MASK(DCP_DTYPE_FP16) | DCP_DTYPE_MASK(DCP_DTYPE_BF16);
constexpr uint32_t kLseDtypes = kOutDtypes | DCP_DTYPE_MASK(DCP_DTYPE_FP32);
constexpr uint32_t kBases = DCP_LSE_BASE_MASK(DCP_LSE_BASE_E) | DCP_LSE_BASE_MASK(DCP_LSE_BASE_2);

// What both built-ins declare alike: device memory, every dtype and base, W <= 8, two slots.
dcpKernelPlugin_v1_t builtin_table(const char* name) {
  dcpKernelPlugin_v1_t t{};
  t.struct_size = sizeof t;
  t.abi_version = DCP_PLUGIN_ABI_VERSION;
  t.name = name;
  t.version = "builtin";
  t.memory = DCP_MEMORY_DEVICE;
  t.out_dtypes = kOutDtypes;
  t.lse_dtypes = kLseDtypes;
  t.lse_bases = kBases;
  t.max_group_size = kMaxDcpSize;
  t.max_slots = kMaxSlots;
  return t;
}

dcpKernelPlugin_v1_t make_direct() {
  dcpKernelPlugin_v1_t t = builtin_table("direct");
  t.epoch_kind = DCP_EPOCH_U32;
  t.capabilities =
      DCP_CAP_GRAPH_SAFE | DCP_CAP_MASKS_EMPTY_KV | DCP_CAP_TIMEOUT_HINT | DCP_CAP_WAIT_STATUS |
      DCP_CAP_COMBINED_LSE | DCP_CAP_PDL | DCP_CAP_LAUNCH_RECORD;
  t.mutants = kDirectMutants.data();
  t.num_mutants = static_cast<int32_t>(kDirectMutants.size());
  t.get_workspace = direct_get_workspace;
  t.init = direct_init;
  t.call = direct_call;
  t.finalize = finalize<DirectContext>;
  t.last_error = last_error<DirectContext>;
  t.set_epoch = direct_set_epoch;
  return t;
}

dcpKernelPlugin_v1_t make_stock() {
  dcpKernelPlugin_v1_t t = builtin_table("stock");
  t.epoch_kind = DCP_EPOCH_U64;  // no epochs at all: NCCL orders the calls
  t.capabilities = DCP_CAP_GRAPH_SAFE | DCP_CAP_MASKS_EMPTY_KV | DCP_CAP_NEEDS_DISTINCT_GPUS;
  t.get_workspace = stock_get_workspace;
  t.init = stock_init;
  t.call = stock_call;
  t.finalize = finalize<StockContext>;
  t.last_error = last_error<StockContext>;
  return t;
}

const dcpKernelPlugin_v1_t kDirect = make_direct();
const dcpKernelPlugin_v1_t kStock = make_stock();

}  // namespace

const dcpKernelPlugin_v1_t* find_builtin_kernel(std::string_view name) {
  if (name == "direct") return &kDirect;
  if (name == "stock") return &kStock;
  return nullptr;
}

std::string builtin_kernel_names() { return "direct, stock"; }

}  // namespace dcp
