// example-upstream-shape: a worked dcp-check kernel plugin (ABI v1) with the
// four-kernel shape of the upstream vLLM direct DCP all-to-all + LSE combine.
// To wrap your own kernel, copy this file: keep the ABI plumbing (bottom half) and
// replace the kernels (top half). The contract: kernels/dcp_kernel_plugin.h.
//
// One call on `slot`: four kernels on args->stream, no host work, parity = epoch & 1.
//   1 bump_epoch   epoch[slot] += 1, in device memory (CUDA graph replay safe)
//   2 dispatch     block (t, d): our heads [d*H, (d+1)*H) of token t -> rank d's
//                  out_recv / lse_recv [slot][parity][r][t]
//   3 signal_wait  ONE block: release-store epoch into every d's flags[slot][parity][r],
//                  then wait until all our flags[slot][parity][*] == epoch (bounded)
//   4 combine      block (t, h): acquire the (already set) flags, combine
// A flag holds the low 32 bits of the u64 epoch, compared by equality: 2^32 is no edge.
//
// DESIGN CHOICE (differs from upstream): upstream spins in every combine block. With
// two ubatch slots in flight on a GPU whose SMs are partly busy, slot A's spinning
// combine blocks fill the free SMs, so slot B's dispatch, which a peer waits for,
// never runs: deadlock. Here only the single 32-thread signal_wait block spins; the
// combine runs after it, finds every flag set and never spins. One tiny spinning
// block per slot cannot starve other kernels: no co-residency is assumed.
//
// Why two parities suffice: call e+2 on a slot overwrites the half call e used. A
// peer P still combining e cannot receive our e+2 writes: we dispatch e+2 only after
// our combine of e+1 finished (stream order), which came after our signal_wait(e+1)
// saw P's signal of e+1, which P issues only after its combine of e finished (stream
// order on P: signal_wait(e+1) follows combine(e)). By the same chain no flag can
// already hold e+2 while we wait for e on that parity.
//
// DCP_EXAMPLE_FOREIGN=1 builds the upstream shape itself, as a kernel written
// elsewhere would arrive: signal_wait only signals, EVERY combine block spins
// on the flags (one block of D threads per token x head), and it publishes nothing (no wait
// status, no timeout hint; its own spin bound, 60 s, outlasts dcp-check's
// deadline). With two slots in flight on a shared GPU it deadlocks exactly as
// described above; it is dcp-check's test of diagnosing a kernel from outside.
//
// DCP_EXAMPLE_BUG=1 builds the deliberately broken variant (an earlier upstream
// revision's mistake): empty-KV rows are still copied and zero-weight sources are
// read and multiplied by 0, so NaN garbage in masked rows poisons the output.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <cuda/atomic>  // libcu++ (part of the CUDA toolkit): cuda::atomic_ref
#include <new>
#include <type_traits>

#include "dcp_kernel_plugin.h"

#ifndef DCP_EXAMPLE_BUG
#define DCP_EXAMPLE_BUG 0
#endif
#ifndef DCP_EXAMPLE_FOREIGN
#define DCP_EXAMPLE_FOREIGN 0
#endif

namespace {

constexpr bool kReadZeroWeight = DCP_EXAMPLE_BUG != 0;  // the bug switch
constexpr bool kForeign = DCP_EXAMPLE_FOREIGN != 0;     // the upstream shape, publishing nothing
constexpr uint64_t kForeignSpinNs = 60'000'000'000ull;  // its own bound, past dcp-check's deadline
constexpr int kMaxW = 8, kMaxSlots = 2, kNumRegions = 4;
constexpr uint64_t kDefaultTimeoutNs = 10'000'000'000ull;  // when neither args nor config give one
constexpr float kLog2e = 1.44269504088896340736f, kLn2 = 0.69314718055994530942f;
const char* const kRegionNames[kNumRegions] = {"out_recv", "lse_recv", "flags", "epoch"};

// Per-slot state in the LOCAL "epoch" region (zero-initialised by dcp-check).
struct SlotState {
  unsigned long long epoch;   // calls run on this slot
  unsigned int combine_done;  // combine blocks finished; back to 0 within each call
  unsigned int reserved;
};

// Everything a kernel needs, passed by value (graph capture bakes it in).
struct Params {
  const int64_t *out_tab, *lse_tab, *flag_tab;  // device int64 tables [W]: each rank's region
  SlotState* state;                             // this rank's [num_slots]
  dcpWaitStatus_v1* status;                     // or nullptr
  int W, r, H, D, Tmax, slot, T;
  int members[kMaxW];      // global ranks, for messages
  const uint16_t* in_out;  // [T, W*H, D], token stride out_stride
  const void* in_lse;      // [T, W*H], token stride lse_stride
  int64_t out_stride, lse_stride;
  int lse_dtype, base_e;
  int vec;  // partial_output and output 16-byte aligned: uint4 accesses
  const int32_t *seq_lens, *qsl;
  int num_seqs;
  uint16_t* output;     // [T, H, D]
  float* combined_lse;  // [T, H] or nullptr
  uint64_t timeout_ns;
};

// Region layout: row (slot, parity, source, token) of out_recv holds H*D
// values, of lse_recv H floats; flag (slot, parity, source) is one u32.
__device__ inline size_t row_index(const Params& p, uint32_t parity, int src, int t) {
  return ((size_t(p.slot) * 2 + parity) * p.W + src) * p.Tmax + t;
}
__device__ inline uint32_t* flag_of(const Params& p, int rank, uint32_t parity, int src) {
  return reinterpret_cast<uint32_t*>(p.flag_tab[rank]) + (size_t(p.slot) * 2 + parity) * p.W + src;
}

using SysRef = cuda::atomic_ref<uint32_t, cuda::thread_scope_system>;

__device__ inline uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Rows of sequence s are tokens [qsl[s], qsl[s+1]); seq_lens[s] == 0 means our
// KV shard of s is empty, so those rows are garbage (maybe NaN).
__device__ bool token_masked(const Params& p, int t) {
  if (p.seq_lens == nullptr || t < p.qsl[0] || t >= p.qsl[p.num_seqs]) return false;
  int lo = 0, hi = p.num_seqs;  // binary search, qsl[lo] <= t < qsl[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (p.qsl[mid] <= t ? lo : hi) = mid;
  }
  return p.seq_lens[lo] == 0;
}

// LSE element i in base 2; NaN and +inf become -inf (both fail `l < inf`).
__device__ float load_lse_base2(const Params& p, int64_t i) {
  float l = p.lse_dtype == DCP_DTYPE_FP32 ? static_cast<const float*>(p.in_lse)[i]
            : p.lse_dtype == DCP_DTYPE_FP16
                ? __half2float(static_cast<const __half*>(p.in_lse)[i])
                : __bfloat162float(static_cast<const __nv_bfloat16*>(p.in_lse)[i]);
  if (p.base_e) l *= kLog2e;
  return l < INFINITY ? l : -INFINITY;
}

// Eight 16-bit values as one uint4 (a 16-byte .cg load, from L2, when `vec`).
__device__ inline uint4 load8(const uint16_t* src, bool vec) {
  if (vec) return __ldcg(reinterpret_cast<const uint4*>(src));
  uint32_t u[4];
  for (int k = 0; k < 4; ++k) u[k] = src[2 * k] | uint32_t(src[2 * k + 1]) << 16;
  return make_uint4(u[0], u[1], u[2], u[3]);
}
__device__ inline uint16_t lane(uint4 v, int k) {  // element k of 8 (constant k after unrolling)
  return uint16_t((k < 2 ? v.x : k < 4 ? v.y : k < 6 ? v.z : v.w) >> (16 * (k & 1)));
}
template <bool kBf16>
__device__ inline float to_f(uint16_t b) {
  return kBf16 ? __bfloat162float(__ushort_as_bfloat16(b)) : __half2float(__ushort_as_half(b));
}
template <bool kBf16>
__device__ inline uint32_t from_f(float f) {  // round to nearest even
  return kBf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(f))
               : __half_as_ushort(__float2half_rn(f));
}
template <bool kBf16>
__device__ inline uint32_t pack2(float lo, float hi) {
  return from_f<kBf16>(lo) | from_f<kBf16>(hi) << 16;
}

// Bounded acquire spin until *flag == want. When `publish`, keeps the
// wait-status record (mapped host memory: volatile stores, slow path only)
// naming what we wait for; on expiry reports who waits on whom, then traps.
__device__ void wait_flag(const Params& p, uint32_t* flag, int src, uint32_t parity, uint32_t want,
                          bool publish, int* published, int* reported) {
  SysRef ref(*flag);
  uint32_t v = ref.load(cuda::memory_order_acquire);
  if (v == want) return;
  dcpWaitStatus_v1* ws = p.status;
  const uint64_t start = now_ns();
  for (uint32_t n = 0; v != want; ++n) {
    const bool expired = now_ns() - start > p.timeout_ns;
    // Refreshed, not written once: another waiting thread, or the other slot's
    // signal_wait, may overwrite the record or clear `waiting` meanwhile.
    if (ws != nullptr && ((publish && n % 1024 == 0) || expired)) {
      ws->wait_source = src;
      ws->wait_slot = p.slot;
      ws->wait_parity = parity;
      ws->wait_epoch = want;
      ws->wait_flag_value = v;
      ws->waiting = 1;
      if (publish) atomicExch(published, 1);
    }
    if (expired) {
      if (ws != nullptr) ws->trapped = 1;
      __threadfence_system();
      if (atomicExch(reported, 1) == 0) {
        printf(
            "example-plugin: rank %d waits for rank %d (slot %d, parity %d, epoch %u; "
            "flag holds %u) -- trapping\n",
            p.members[p.r], p.members[src], p.slot, int(parity), want, v);
      }
      __trap();
    }
    __nanosleep(32);
    v = ref.load(cuda::memory_order_acquire);
  }
}

// ------------------------------------------------------------------ kernels

__global__ void bump_epoch_kernel(SlotState* st) { st->epoch += 1; }

// Grid (T, W): block (t, d) sends token t's head slice for destination d.
__global__ void dispatch_kernel(const Params p) {
  const int t = blockIdx.x, d = blockIdx.y, HD = p.H * p.D;
  const uint32_t parity = uint32_t(p.state[p.slot].epoch & 1);
  const size_t row = row_index(p, parity, p.r, t);
  const bool masked = token_masked(p, t);
  if (!masked || kReadZeroWeight) {  // a masked row is never read: skip its copy
    const uint16_t* src = p.in_out + t * p.out_stride + int64_t(d) * HD;
    uint16_t* dst = reinterpret_cast<uint16_t*>(p.out_tab[d]) + row * HD;
    if (p.vec) {  // rows stay 16-byte aligned: out_stride % 8 == 0, D % 8 == 0
      for (int i = threadIdx.x; i < HD / 8; i += blockDim.x)
        reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    } else {
      for (int i = threadIdx.x; i < HD; i += blockDim.x) dst[i] = src[i];
    }
  }
  float* lse_dst = reinterpret_cast<float*>(p.lse_tab[d]) + row * p.H;
  for (int h = threadIdx.x; h < p.H; h += blockDim.x)
    lse_dst[h] = masked ? -INFINITY : load_lse_base2(p, t * p.lse_stride + int64_t(d) * p.H + h);
}

// One block of 32 threads, after dispatch in stream order (so all our payload
// stores are done). Thread d < W: system fence, then release-store the epoch
// into destination d's flag for us; then thread s < W waits for source s.
__global__ void signal_wait_kernel(const Params p) {
  __shared__ int published, reported;
  const uint64_t e = p.state[p.slot].epoch;
  const uint32_t e32 = uint32_t(e), parity = uint32_t(e & 1);
  const int i = threadIdx.x;
  if (i == 0) published = reported = 0;
  __syncthreads();
  if (i < p.W) {
    __threadfence_system();
    SysRef(*flag_of(p, i, parity, p.r)).store(e32, cuda::memory_order_release);
  }
  __syncthreads();
  if (i == 0 && p.status != nullptr) p.status->last_signalled_epoch[p.slot] = e32;
  if (kForeign) return;  // the combine blocks wait, each on its own
  if (i < p.W)
    wait_flag(p, flag_of(p, p.r, parity, i), i, parity, e32, true, &published, &reported);
  __syncthreads();
  if (i == 0 && published) p.status->waiting = 0;
}

// Grid T*H: block (t, h) writes output row (t, h), each thread 8-value chunks.
// SPEC: l_s base 2, m = max, w_s = 2^(l_s - m) / sum, fp32 accumulation, one
// rounding; every l_s = -inf -> exact zeros; a weight-0 source is never read.
template <bool kBf16>
__global__ void combine_kernel(const Params p) {
  __shared__ float w[kMaxW];
  __shared__ int any, reported;
  const int t = blockIdx.x / p.H, h = blockIdx.x % p.H;
  const uint64_t e = p.state[p.slot].epoch;
  const uint32_t e32 = uint32_t(e), parity = uint32_t(e & 1);
  if (threadIdx.x == 0) {
    // The flags are already set (signal_wait saw them), so this returns at
    // once; the acquire is what orders this block's reads after the peers'.
    // (kForeign: nothing waited before, so every block spins here.)
    reported = 0;
    for (int s = 0; s < p.W; ++s)
      wait_flag(p, flag_of(p, p.r, parity, s), s, parity, e32, false, nullptr, &reported);
    const float* lse = reinterpret_cast<const float*>(p.lse_tab[p.r]);
    float l[kMaxW], m = -INFINITY, sum = 0.0f;  // fixed bounds keep l[] in registers
#pragma unroll
    for (int s = 0; s < kMaxW; ++s) {
      l[s] = s < p.W ? __ldcg(lse + row_index(p, parity, s, t) * p.H + h) : -INFINITY;
      m = fmaxf(m, l[s]);
    }
    any = m > -INFINITY;
#pragma unroll
    for (int s = 0; s < kMaxW; ++s) {
      w[s] = (any && l[s] > -INFINITY) ? exp2f(l[s] - m) : 0.0f;
      sum += w[s];  // >= 1 when any: the max source contributes 2^0
    }
    for (int s = 0; s < p.W; ++s) w[s] = any ? w[s] / sum : 0.0f;
    if (p.combined_lse != nullptr)
      p.combined_lse[int64_t(t) * p.H + h] =
          any ? (m + log2f(sum)) * (p.base_e ? kLn2 : 1.0f) : -INFINITY;
  }
  __syncthreads();  // thread 0's acquire now orders every thread's reads below

  const uint16_t* x = reinterpret_cast<const uint16_t*>(p.out_tab[p.r]) +
                      row_index(p, parity, 0, t) * p.H * p.D + size_t(h) * p.D;
  const size_t src_stride = size_t(p.Tmax) * p.H * p.D;  // next source, same (t, h)
  uint16_t* out = p.output + (int64_t(t) * p.H + h) * p.D;
  for (int c = threadIdx.x; c < p.D / 8; c += blockDim.x) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int s = 0; s < p.W && any; ++s) {
      if (w[s] == 0.0f && !kReadZeroWeight) continue;  // never read: the row may be NaN
      const uint4 v = load8(x + s * src_stride + c * 8, p.vec);
#pragma unroll
      for (int k = 0; k < 8; ++k) acc[k] = fmaf(w[s], to_f<kBf16>(lane(v, k)), acc[k]);
    }
    const uint4 o = make_uint4(pack2<kBf16>(acc[0], acc[1]), pack2<kBf16>(acc[2], acc[3]),
                               pack2<kBf16>(acc[4], acc[5]), pack2<kBf16>(acc[6], acc[7]));
    uint16_t* dst = out + c * 8;  // +0.0 everywhere when !any
    if (p.vec) {
      *reinterpret_cast<uint4*>(dst) = o;
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) dst[k] = lane(o, k);
    }
  }

  if (p.status == nullptr) return;  // the same for every block
  __syncthreads();
  if (threadIdx.x == 0) {  // the last block to finish reports the call complete
    __threadfence();
    SlotState* st = &p.state[p.slot];
    if (atomicAdd(&st->combine_done, 1u) + 1u == gridDim.x) {
      st->combine_done = 0;  // ready for the next call, or the next graph replay
      p.status->last_completed_epoch[p.slot] = e32;
    }
  }
}

// set_epoch: as if `epoch` calls had run on this slot, on our side: our epoch
// and the flags we own (the ones peers write and we wait on).
__global__ void set_epoch_kernel(SlotState* st, uint32_t* slot_flags, int W, uint64_t epoch,
                                 dcpWaitStatus_v1* ws, int slot) {
  for (int i = threadIdx.x; i < 2 * W; i += blockDim.x) slot_flags[i] = uint32_t(epoch);
  if (threadIdx.x != 0) return;
  st->epoch = epoch;
  st->combine_done = 0;
  if (ws != nullptr) {
    ws->last_signalled_epoch[slot] = uint32_t(epoch);
    ws->last_completed_epoch[slot] = uint32_t(epoch);
  }
}

// --------------------------------------------------------------- host side

// The only mutable global: messages of failures that have no context yet.
thread_local char t_error[256];

struct Context {  // one per init(): several may coexist in a process
  Params base{};  // the call-independent fields, filled by init
  int num_slots = 0;
  uint64_t config_timeout_ns = 0;
  uint32_t* own_flags = nullptr;  // our "flags" region (local address)
  char error[256] = {};
};

dcpStatus_t fail(char* buf, dcpStatus_t st, const char* fmt, const char* arg = "") {
  snprintf(buf, 256, fmt, arg);
  return st;
}

// ABI rule: a reader uses a field only when the writer's struct_size covers it.
#define DCP_HAS(ptr, field)                                                       \
  ((ptr)->struct_size >=                                                          \
   offsetof(std::remove_cv_t<std::remove_reference_t<decltype(*(ptr))>>, field) + \
       sizeof((ptr)->field))

// Arrays of ABI structs are walked with the writer's struct_size as stride.
template <class T>
T* at(T* base, int i) {
  using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  return reinterpret_cast<T*>(reinterpret_cast<Byte*>(base) + size_t(i) * base->struct_size);
}

dcpStatus_t check_config(const dcpGroupConfig_v1* c) {
  const dcpStatus_t bad = DCP_STATUS_INVALID_ARGUMENT;
  if (c == nullptr || !DCP_HAS(c, num_slots))
    return fail(t_error, bad, "config missing or too old");
  if (c->group_size < 1 || c->group_size > kMaxW)
    return fail(t_error, DCP_STATUS_UNSUPPORTED, "group size must be 1..8");
  if (c->num_slots < 1 || c->num_slots > kMaxSlots)
    return fail(t_error, DCP_STATUS_UNSUPPORTED, "num_slots must be 1..2");
  if (c->group_rank < 0 || c->group_rank >= c->group_size || c->max_tokens < 1 ||
      c->heads_per_rank < 1 || c->head_dim < 8 || c->head_dim % 8 != 0)
    return fail(t_error, bad, "bad group config (rank, max_tokens, H, or D not a multiple of 8)");
  return DCP_STATUS_OK;
}

// Bytes per rank; each region covers all slots (per-slot offsets in row_index).
void region_sizes(const dcpGroupConfig_v1* c, uint64_t bytes[kNumRegions]) {
  const uint64_t rows = uint64_t(c->num_slots) * 2 * c->group_size * c->max_tokens;
  bytes[0] = rows * c->heads_per_rank * c->head_dim * 2;  // out_recv [S][2][W][Tmax][H][D] 16-bit
  bytes[1] = rows * c->heads_per_rank * 4;                // lse_recv [S][2][W][Tmax][H] fp32
  bytes[2] = uint64_t(c->num_slots) * 2 * c->group_size * 4;  // flags    [S][2][W] u32
  bytes[3] = uint64_t(c->num_slots) * sizeof(SlotState);      // epoch    [S]
}

dcpStatus_t get_workspace(const dcpGroupConfig_v1* config, dcpRegionRequest_v1* regions,
                          int32_t capacity, int32_t* num_regions) {
  if (dcpStatus_t st = check_config(config); st != DCP_STATUS_OK) return st;
  if (regions == nullptr || num_regions == nullptr || capacity < kNumRegions ||
      regions->struct_size < sizeof(dcpRegionRequest_v1))
    return fail(t_error, DCP_STATUS_INVALID_ARGUMENT, "need room for 4 region requests");
  uint64_t bytes[kNumRegions];
  region_sizes(config, bytes);
  const int32_t kinds[kNumRegions] = {DCP_REGION_PAYLOAD, DCP_REGION_PAYLOAD, DCP_REGION_CONTROL,
                                      DCP_REGION_LOCAL};
  for (int i = 0; i < kNumRegions; ++i) {
    dcpRegionRequest_v1* q = at(regions, i);
    snprintf(q->name, DCP_REGION_NAME_BYTES, "%s", kRegionNames[i]);
    q->bytes = bytes[i];
    q->alignment = 256;  // >= 16 for uint4; every row offset is a multiple of 16 bytes
    q->kind = kinds[i];
    q->init = DCP_REGION_INIT_ZERO;  // flags and epochs start at 0 (payload: don't care)
    q->fill_byte = 0;
  }
  *num_regions = kNumRegions;
  return DCP_STATUS_OK;
}

dcpStatus_t init(const dcpGroupConfig_v1* config, const dcpRegion_v1* regions, int32_t num_regions,
                 const dcpHostServices_v1* /*services: not needed*/, void** context) {
  if (dcpStatus_t st = check_config(config); st != DCP_STATUS_OK) return st;
  if (context == nullptr || regions == nullptr || num_regions != kNumRegions ||
      regions->struct_size < sizeof(dcpRegion_v1))
    return fail(t_error, DCP_STATUS_INVALID_ARGUMENT, "expected the 4 regions of get_workspace");
  uint64_t bytes[kNumRegions];
  region_sizes(config, bytes);
  const int W = config->group_size;
  for (int i = 0; i < kNumRegions; ++i) {
    const dcpRegion_v1* g = at(regions, i);
    const bool mapped = i == 3 || (g->peers != nullptr && g->peers_device != nullptr);
    if (g->name == nullptr || strcmp(g->name, kRegionNames[i]) != 0)
      return fail(t_error, DCP_STATUS_INVALID_ARGUMENT, "region %s missing or out of order",
                  kRegionNames[i]);
    if (g->bytes < bytes[i] || g->local == nullptr || !mapped)
      return fail(t_error, DCP_STATUS_INVALID_ARGUMENT, "region %s too small or unmapped",
                  kRegionNames[i]);
    for (int d = 0; i < 3 && d < W; ++d)
      if (reinterpret_cast<uintptr_t>(g->peers[d]) % 16 != 0)
        return fail(t_error, DCP_STATUS_INTERNAL, "region %s: peer mapping not 16-byte aligned",
                    kRegionNames[i]);
  }
  // Load every kernel now. With lazy loading (the default since CUDA 12.2) the
  // first launch of a kernel may wait for the device to go idle; if a
  // signal_wait is spinning then, waiting for a peer whose host thread is
  // stuck the same way (ranks sharing a process), nothing moves. init() may
  // synchronise; call() must not.
  const void* kernels[] = {reinterpret_cast<const void*>(bump_epoch_kernel),
                           reinterpret_cast<const void*>(dispatch_kernel),
                           reinterpret_cast<const void*>(signal_wait_kernel),
                           reinterpret_cast<const void*>(combine_kernel<true>),
                           reinterpret_cast<const void*>(combine_kernel<false>),
                           reinterpret_cast<const void*>(set_epoch_kernel)};
  for (const void* k : kernels) {
    cudaFuncAttributes attr;
    if (cudaError_t e = cudaFuncGetAttributes(&attr, k); e != cudaSuccess)
      return fail(t_error, DCP_STATUS_CUDA_ERROR, "loading the kernels failed: %s",
                  cudaGetErrorString(e));
  }
  Context* ctx = new (std::nothrow) Context;
  if (ctx == nullptr) return fail(t_error, DCP_STATUS_INTERNAL, "out of host memory");
  Params& p = ctx->base;
  p.out_tab = at(regions, 0)->peers_device;  // device int64 tables, as the upstream op takes them
  p.lse_tab = at(regions, 1)->peers_device;
  p.flag_tab = at(regions, 2)->peers_device;
  p.state = static_cast<SlotState*>(at(regions, 3)->local);
  p.status = DCP_HAS(config, wait_status) && !kForeign ? config->wait_status : nullptr;
  p.W = W;
  p.r = config->group_rank;
  p.H = config->heads_per_rank;
  p.D = config->head_dim;
  p.Tmax = config->max_tokens;
  for (int d = 0; d < W; ++d) p.members[d] = config->members ? config->members[d] : d;
  ctx->num_slots = config->num_slots;
  ctx->config_timeout_ns = DCP_HAS(config, timeout_ns) ? config->timeout_ns : 0;
  ctx->own_flags = static_cast<uint32_t*>(at(regions, 2)->local);
  *context = ctx;
  return DCP_STATUS_OK;
}

dcpStatus_t launch_status(Context* ctx) {  // launch errors only: call() never synchronises
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return DCP_STATUS_OK;
  return fail(ctx->error, DCP_STATUS_CUDA_ERROR, "kernel launch failed: %s",
              cudaGetErrorString(err));
}

bool aligned(const void* ptr, uintptr_t n) { return reinterpret_cast<uintptr_t>(ptr) % n == 0; }

// Refusals depend only on the arguments, which are the same on every rank, so
// every rank refuses the same call and none enters the exchange alone.
dcpStatus_t call(void* context, const dcpCallArgs_v1* a) {
  Context* ctx = static_cast<Context*>(context);
  if (ctx == nullptr) return fail(t_error, DCP_STATUS_INVALID_ARGUMENT, "null context");
  char* err = ctx->error;
  const dcpStatus_t bad = DCP_STATUS_INVALID_ARGUMENT;
  Params p = ctx->base;
  if (a == nullptr || !DCP_HAS(a, output)) return fail(err, bad, "call args missing or too old");
  if (a->slot < 0 || a->slot >= ctx->num_slots) return fail(err, bad, "slot out of range");
  if (a->num_tokens < 1 || a->num_tokens > p.Tmax)
    return fail(err, bad, "num_tokens must be in [1, max_tokens]");
  if (a->out_dtype != DCP_DTYPE_FP16 && a->out_dtype != DCP_DTYPE_BF16)
    return fail(err, bad, "out dtype must be fp16 or bf16");
  if (a->lse_dtype < DCP_DTYPE_FP16 || a->lse_dtype > DCP_DTYPE_FP32 ||
      (a->lse_base != DCP_LSE_BASE_E && a->lse_base != DCP_LSE_BASE_2))
    return fail(err, bad, "unsupported LSE dtype or base");
  if (a->out_token_stride < int64_t(p.W) * p.H * p.D || a->out_token_stride % 8 != 0)
    return fail(err, bad, "out_token_stride must be >= W*H*D and a multiple of 8");
  if (a->lse_token_stride < int64_t(p.W) * p.H)
    return fail(err, bad, "lse_token_stride must be >= W*H");
  if (a->partial_output == nullptr || a->partial_lse == nullptr || a->output == nullptr ||
      !aligned(a->partial_output, 2) || !aligned(a->output, 2) ||
      !aligned(a->partial_lse, a->lse_dtype == DCP_DTYPE_FP32 ? 4 : 2))
    return fail(err, bad, "null or misaligned input/output");
  if ((a->seq_lens == nullptr) != (a->query_start_loc == nullptr) ||
      (a->seq_lens && a->num_seqs < 1))
    return fail(err, bad, "seq_lens and query_start_loc go together, with num_seqs >= 1");

  p.slot = a->slot;
  p.T = a->num_tokens;
  p.lse_dtype = a->lse_dtype;
  p.in_out = static_cast<const uint16_t*>(a->partial_output);
  p.out_stride = a->out_token_stride;
  p.in_lse = a->partial_lse;
  p.lse_stride = a->lse_token_stride;
  p.base_e = a->lse_base == DCP_LSE_BASE_E;
  p.seq_lens = a->seq_lens;
  p.qsl = a->query_start_loc;
  p.num_seqs = a->seq_lens ? a->num_seqs : 0;
  p.output = static_cast<uint16_t*>(a->output);
  p.combined_lse = DCP_HAS(a, combined_lse) ? a->combined_lse : nullptr;
  const uint64_t hint = DCP_HAS(a, timeout_ns) ? a->timeout_ns : 0;
  p.timeout_ns = hint ? hint : ctx->config_timeout_ns ? ctx->config_timeout_ns : kDefaultTimeoutNs;
  if (kForeign) p.timeout_ns = kForeignSpinNs;  // it declares no timeout hint: ignores them
  p.vec = aligned(a->partial_output, 16) && aligned(a->output, 16);

  cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
  const int chunks = p.H * p.D / 8, row_chunks = p.D / 8;  // 16-byte chunks per send / output row
  const int dispatch_threads = chunks >= 256 ? 256 : (chunks + 31) / 32 * 32;
  // kForeign: upstream's block of one thread per element of D (at most 1024).
  const int combine_threads = kForeign ? (p.D < 1024 ? p.D : 1024)
                              : row_chunks >= 128 ? 128
                                                  : (row_chunks + 31) / 32 * 32;
  bump_epoch_kernel<<<1, 1, 0, stream>>>(p.state + p.slot);
  dispatch_kernel<<<dim3(p.T, p.W), dispatch_threads, 0, stream>>>(p);
  signal_wait_kernel<<<1, 32, 0, stream>>>(p);
  if (a->out_dtype == DCP_DTYPE_BF16)
    combine_kernel<true><<<p.T * p.H, combine_threads, 0, stream>>>(p);
  else
    combine_kernel<false><<<p.T * p.H, combine_threads, 0, stream>>>(p);
  return launch_status(ctx);
}

// Called at an idle point with the same epoch on every rank, outside capture.
// The epoch travels as a kernel argument: no host buffer, no memcpy.
dcpStatus_t set_epoch(void* context, int32_t slot, uint64_t epoch, void* stream) {
  Context* ctx = static_cast<Context*>(context);
  if (ctx == nullptr) return fail(t_error, DCP_STATUS_INVALID_ARGUMENT, "null context");
  if (slot < 0 || slot >= ctx->num_slots)
    return fail(ctx->error, DCP_STATUS_INVALID_ARGUMENT, "slot out of range");
  const Params& p = ctx->base;
  set_epoch_kernel<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(
      p.state + slot, ctx->own_flags + size_t(slot) * 2 * p.W, p.W, epoch, p.status, slot);
  return launch_status(ctx);
}

dcpStatus_t finalize(void* context) {  // the regions belong to dcp-check
  delete static_cast<Context*>(context);
  return DCP_STATUS_OK;
}

const char* last_error(void* context) {
  return context != nullptr ? static_cast<Context*>(context)->error : t_error;
}

}  // namespace

// The one exported symbol (DCP_PLUGIN_EXPORT: default visibility; the build
// hides everything else). C linkage keeps its name plain: dcpKernelPlugin_v1.
extern "C" DCP_PLUGIN_EXPORT const dcpKernelPlugin_v1_t dcpKernelPlugin_v1 = {
    /*struct_size=*/sizeof(dcpKernelPlugin_v1_t),
    /*abi_version=*/DCP_PLUGIN_ABI_VERSION,
    /*name=*/DCP_EXAMPLE_FOREIGN ? "example-foreign-shape"
    : DCP_EXAMPLE_BUG            ? "example-upstream-shape-broken"
                                 : "example-upstream-shape",
    /*version=*/"1.0",
    /*memory=*/DCP_MEMORY_DEVICE,
    /*out_dtypes=*/DCP_DTYPE_MASK(DCP_DTYPE_FP16) | DCP_DTYPE_MASK(DCP_DTYPE_BF16),
    /*lse_dtypes=*/DCP_DTYPE_MASK(DCP_DTYPE_FP32) | DCP_DTYPE_MASK(DCP_DTYPE_FP16) |
        DCP_DTYPE_MASK(DCP_DTYPE_BF16),
    /*lse_bases=*/DCP_LSE_BASE_MASK(DCP_LSE_BASE_E) | DCP_LSE_BASE_MASK(DCP_LSE_BASE_2),
    /*max_group_size=*/kMaxW,
    /*max_slots=*/kMaxSlots,
    /*epoch_kind=*/DCP_EPOCH_U64,
    // combined_lse: fp32 m + log2f(sum), graded against float64 within
    // 2^-23 (4 max|l2| + 4 (W + 2) + 2 |want|) (docs/plugins.md).
    // The foreign shape declares what upstream's op supports, and no
    // wait-status or timeout-hint: it publishes nothing.
    /*capabilities=*/DCP_EXAMPLE_FOREIGN
        ? DCP_CAP_GRAPH_SAFE | DCP_CAP_MASKS_EMPTY_KV | DCP_CAP_COMBINED_LSE
        : DCP_CAP_GRAPH_SAFE | DCP_CAP_MASKS_EMPTY_KV | DCP_CAP_TIMEOUT_HINT |
              DCP_CAP_WAIT_STATUS | DCP_CAP_COMBINED_LSE,
    /*mutants=*/nullptr,
    /*num_mutants=*/0,
    get_workspace,
    init,
    call,
    finalize,
    last_error,
    /*set_epoch (optional)=*/set_epoch,
};
