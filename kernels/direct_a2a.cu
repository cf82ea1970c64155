// The direct DCP all-to-all + LSE combine (SPEC section 1).
//
// One call on slot `slot` is three kernels on the caller's stream:
//   dispatch: (under PDL, griddepcontrol.wait first) e = state.epoch + 1,
//     parity = e & 1. Block (x, d) copies this rank's head slice
//     [d*H, (d+1)*H) of some tokens into destination d's receive buffers at
//     [parity][r], publishing LSE as base-2 fp32 (-inf for
//     rows of empty KV shards, whose payload is skipped). The last block to
//     finish for destination d release-stores e into d's flag [parity][r]; the
//     last destination signalled writes e back to state.epoch.
//   wait: one block; its thread 0 reads e from state.epoch (the dispatch
//     kernel finished before it starts: stream order) and acquire-waits until
//     every flag [parity][s] == e.
//   combine: never spins; stream order puts it after the wait's acquire.
//
// Forward progress: only the one-block wait kernel spins, so a rank never has
// more than one spinning block per slot (two in all), whatever T x H and
// whatever else occupies its SMs (the other ubatch's compute under DBO); the
// dispatch a peer waits for always finds a free slot once one more block fits.
//
// Epoch bump (graph-safe, no host involvement): every dispatch block reads the
// old epoch before it arrives at its destination counter, and only the block
// completing the last destination writes the new one, so no block can read a
// half-updated value. The counters return to 0 within the call, so replaying a
// captured graph starts from the same state.
//
// Memory ordering of one signal (r -> d), the invariant the combine relies on:
//   payload stores by every thread of block B -> __syncthreads (CTA order) ->
//   B's thread 0: fence.sc.sys; atomicAdd(dest counter) -> the last block L
//   observes B's increment (RMW chain); L: fence.sc.sys; st.release.sys flag
//   -> d's wait kernel, thread 0: ld.acquire.sys sees e -> the wait kernel ends
//   -> (stream order) d's combine kernel reads the payload with ld.global.cg.
//   (The spinning-combine-blocks mutant: acquire by each block's thread 0, then
//   __syncthreads.) Causality is transitive along that chain.
//
// Why two parities suffice: r writes [parity(e)] of d only during call e,
// after its combine of e-1 finished, which needed d's signal for e-1, which d
// sends only after its combine of e-2 (the last reader of that parity) ended.
#include <algorithm>
#include <cstdio>
#include <string>

#include "combine_device.cuh"
#include "direct_a2a.h"
#include "global_timer.cuh"
#include "mutants.h"

namespace dcp {
namespace {

constexpr int kCombineThreads = 256;
constexpr int kWarpsPerCombineBlock = kCombineThreads / 32;
// The combine does not spin (the wait kernel did), so its grid size is a
// throughput choice only.
constexpr int kMaxCombineBlocks = 48;
constexpr int kMaxDispatchBlocksPerDest = 32;
// unjoined-side-stream: its side stream's sends use few blocks (comm kernels
// leave the SMs to compute), so a late rank's sends outlast its combine.
constexpr int kSideBlocksPerDest = 4;

// Which destinations a dispatch grid serves: all (blockIdx.y = d), or for the
// unjoined-side-stream mutant this rank only (caller's stream) or its peers
// only (side stream, blockIdx.y skips this rank).
enum DispatchPart : int { kDispatchAll = 0, kDispatchSelf = 1, kDispatchPeers = 2 };

constexpr size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// ---------------------------------------------------------------- PTX helpers

__device__ __forceinline__ void store_release_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t load_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void store_relaxed_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t load_relaxed_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint32_t load_volatile(const uint32_t* p) {
  return *reinterpret_cast<const volatile uint32_t*>(p);
}

// ------------------------------------------------------------------- helpers

template <bool kWithMutants>
__device__ __forceinline__ int active_mutant(int mutant) {
  if constexpr (kWithMutants) {
    return mutant;
  } else {
    return kMutantNone;  // constant: every mutant branch folds away
  }
}

__device__ __forceinline__ DirectSlotState* slot_state(const DirectA2AParams& p, int mutant) {
  return mutant == kMutantSharedSlotEpoch ? p.state_slot0 : p.state;
}

// Wraparound-safe: flags and epochs are u32 counters compared by equality.
__device__ __forceinline__ bool flag_accepted(uint32_t flag, uint32_t epoch, int mutant) {
  if (mutant == kMutantStaleEpochAccepted) {
    return static_cast<int32_t>(flag - (epoch - 2u)) >= 0;  // the mistake: accepts e - 2
  }
  if (mutant == kMutantSignedEpochOrder) {
    // The mistake: ordered compare of the counters as int32. Past 2^31 the
    // epoch is negative and the previous use's (positive) flag satisfies it.
    return static_cast<int32_t>(flag) >= static_cast<int32_t>(epoch);
  }
  return flag == epoch;
}

// Receive rows per source: max_tokens. The host-mapped-params mutant reads
// the call's T from the host word its call() wrote (clamped to the workspace,
// so it misplaces rows but never faults).
__device__ __forceinline__ int recv_rows(const DirectA2AParams& p, int mutant) {
  if (mutant != kMutantHostMappedParams || p.host_tokens == nullptr) return p.max_tokens;
  const int t = *p.host_tokens;
  return t < 1 ? 1 : (t > p.max_tokens ? p.max_tokens : t);
}

// ------------------------------------------------------------------ dispatch

// Under PDL (p.pdl) this kernel may start while the inputs' producer still
// runs: griddepcontrol.wait blocks until the producer grid completed and its
// writes are visible. It comes before any load, the slot state's included.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

template <ElemType kLse, bool kWithMutants>
__global__ void __launch_bounds__(256)
    direct_dispatch_kernel(const DirectA2AParams p, int mutant_id, int part_id) {
  const int mutant = active_mutant<kWithMutants>(mutant_id);
  const int part = kWithMutants ? part_id : kDispatchAll;
  if (p.pdl != 0 && mutant != kMutantNoGridDependencyWait) grid_dependency_wait();
  DirectSlotState* st = slot_state(p, mutant);
  const bool relaxed = mutant == kMutantRelaxedOrdering || mutant == kMutantRelaxedSpinningCombine;
  // The self part runs on the caller's stream, which counts combine_epoch.
  const uint32_t epoch =
      load_volatile(part == kDispatchSelf ? &st->combine_epoch : &st->epoch) + 1u;
  const uint32_t parity = mutant == kMutantSingleParity ? 0u : (epoch & 1u);
  // Launch record (DCP_CAP_LAUNCH_RECORD): this call's dispatch has begun.
  if (p.status != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
    p.status->last_started_epoch[p.slot] = epoch;
  }

  const int W = p.dcp_size, H = p.heads_per_rank, D = p.head_dim, r = p.group_rank;
  const int d = part == kDispatchSelf                             ? r
                : part == kDispatchPeers && int(blockIdx.y) >= r ? int(blockIdx.y) + 1
                                                                 : int(blockIdx.y);
  int head_begin = d * H;
  if (mutant == kMutantLastRankHeadOffByOne && d == W - 1) head_begin -= 1;
  const int src_pos = mutant == kMutantWrongSourcePosition ? d : r;
  const int64_t out_stride =
      mutant == kMutantIgnoreOutStride ? int64_t{W} * H * D : p.out_token_stride;
  const int64_t lse_stride = mutant == kMutantIgnoreLseStride ? int64_t{W} * H : p.lse_token_stride;
  uint32_t* flag = p.flags[d] + parity * W + r;

  if (mutant == kMutantReadFarPastInput && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
    // The mistake: an offset 2^40 bytes past the input, outside every
    // allocation. The load is volatile, so it is issued although unused.
    const volatile uint32_t* far = reinterpret_cast<const volatile uint32_t*>(
        static_cast<const uint8_t*>(p.partial_output) + (int64_t{1} << 40));
    const uint32_t unused = *far;
    asm volatile("" ::"r"(unused));
  }
  if (mutant == kMutantSignalBeforePayload && blockIdx.x == 0 && threadIdx.x == 0) {
    store_release_sys(flag, epoch);  // the mistake: nothing has been written yet
  }

  const int vecs_per_row = H * D / device::kVecElems;
  const int64_t dst_row0 = (int64_t{parity} * W + src_pos) * recv_rows(p, mutant);
  for (int t = blockIdx.x; t < p.num_tokens; t += gridDim.x) {
    bool masked = math::token_masked(p.seq_lens, p.query_start_loc, p.num_seqs, t);
    if (mutant == kMutantEmptyNotMasked) masked = false;
    if (!masked || mutant == kMutantMaskedRowsRead) {
      const uint4* src =
          reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.partial_output) +
                                         t * out_stride + int64_t{head_begin} * D);
      uint4* dst =
          reinterpret_cast<uint4*>(static_cast<uint16_t*>(p.out_recv[d]) + (dst_row0 + t) * H * D);
      for (int i = threadIdx.x; i < vecs_per_row; i += blockDim.x) dst[i] = __ldg(src + i);
    }
    float* lse_dst = p.lse_recv[d] + (dst_row0 + t) * H;
    for (int h = threadIdx.x; h < H; h += blockDim.x) {
      lse_dst[h] = masked ? math::neg_inf()
                          : device::load_lse_base2<kLse>(
                                p.partial_lse, t * lse_stride + head_begin + h, p.lse_base_e != 0,
                                mutant == kMutantNoBaseConversion);
    }
  }

  __syncthreads();  // every thread's stores precede thread 0's fence (CTA order)
  if (threadIdx.x != 0) return;
  if (!relaxed && mutant != kMutantNoArrivalFence) __threadfence_system();
  if (atomicAdd(&st->dest_arrivals[d], 1u) + 1u != gridDim.x) return;
  // Last block for destination d: every block's payload to d is visible.
  st->dest_arrivals[d] = 0;
  if (relaxed) {
    store_relaxed_sys(flag, epoch);  // the mistake: no fence, no release
  } else {
    __threadfence_system();
    store_release_sys(flag, epoch);
  }
  if (part == kDispatchSelf) return;  // the peers' part moves st->epoch
  if (atomicAdd(&st->dests_signalled, 1u) + 1u != gridDim.y) return;
  // Every block of this call has read the old epoch before arriving above.
  st->dests_signalled = 0;
  st->epoch = epoch;
  if (p.status != nullptr) p.status->last_signalled_epoch[p.slot] = epoch;
}

// ------------------------------------------------------------------- combine

// The epoch of the call in progress, for the wait and combine kernels: the
// dispatch before them on the stream wrote it. The unjoined-side-stream
// mutant's sends may still run, so its caller's stream keeps its own count.
__device__ __forceinline__ uint32_t call_epoch(DirectSlotState* st, int mutant) {
  if (mutant == kMutantUnjoinedSideStream) return load_volatile(&st->combine_epoch) + 1u;
  return load_volatile(&st->epoch);
}

// Takes scalars, not the params: passing the params struct by reference to a
// non-inlined function would copy it to local memory in every thread.
__device__ __noinline__ void report_and_trap(WaitStatus* status, uint32_t* trap_reported, int rank,
                                             int source, int source_rank, int slot, uint32_t parity,
                                             uint32_t epoch, uint32_t flag) {
  if (status != nullptr) {
    status->wait_source = source;
    status->wait_slot = slot;
    status->wait_parity = parity;
    status->wait_epoch = epoch;
    status->wait_flag_value = flag;
    status->waiting = 1;
    status->trapped = 1;
    __threadfence_system();
  }
  if (atomicExch(trap_reported, 1u) == 0u) {
    printf(
        "dcp-check: rank %d waits for rank %d (slot %d, parity %u, epoch %u; flag holds %u) "
        "-- trapping\n",
        rank, source_rank, slot, parity, epoch, flag);
  }
  __trap();
}

// Thread 0 of each block waits for every source in turn. Only block 0
// publishes into the (PCIe-mapped) status record, and only when a wait is not
// satisfied at once, so the fast path never touches host memory.
template <bool kWithMutants>
__device__ void wait_for_sources(const DirectA2AParams& p, DirectSlotState* st, uint32_t epoch,
                                 uint32_t parity, int mutant) {
  const bool relaxed = mutant == kMutantRelaxedOrdering || mutant == kMutantRelaxedSpinningCombine;
  const uint32_t* flags = p.flags[p.group_rank] + parity * p.dcp_size;
  const bool publish = blockIdx.x == 0 && p.status != nullptr;
  for (int s = 0; s < p.dcp_size; ++s) {
    uint32_t f = relaxed ? load_relaxed_sys(flags + s) : load_acquire_sys(flags + s);
    if (flag_accepted(f, epoch, mutant)) continue;
    const uint64_t start = global_timer_ns();
    uint32_t shown = f;
    if (publish) {
      WaitStatus* ws = p.status;
      ws->wait_source = s;
      ws->wait_slot = p.slot;
      ws->wait_parity = parity;
      ws->wait_epoch = epoch;
      ws->wait_flag_value = f;
      ws->waiting = 1;
    }
    do {
      if (global_timer_ns() - start > p.spin_timeout_ns) {
        report_and_trap(p.status, &st->trap_reported, p.members[p.group_rank], s, p.members[s],
                        p.slot, parity, epoch, f);
      }
      f = relaxed ? load_relaxed_sys(flags + s) : load_acquire_sys(flags + s);
      if (publish && f != shown) {
        p.status->wait_flag_value = f;
        shown = f;
      }
    } while (!flag_accepted(f, epoch, mutant));
    if (publish) p.status->waiting = 0;
  }
}

// One block: thread 0 acquire-waits for every source's signal of this call.
template <bool kWithMutants>
__global__ void __launch_bounds__(32) direct_wait_kernel(const DirectA2AParams p, int mutant_id) {
  if (threadIdx.x != 0) return;
  const int mutant = active_mutant<kWithMutants>(mutant_id);
  DirectSlotState* st = slot_state(p, mutant);
  const uint32_t epoch = call_epoch(st, mutant);
  const uint32_t parity = mutant == kMutantSingleParity ? 0u : (epoch & 1u);
  wait_for_sources<kWithMutants>(p, st, epoch, parity, mutant);
}

template <ElemType kOut, bool kWithMutants>
__global__ void __launch_bounds__(kCombineThreads)
    direct_combine_kernel(const DirectA2AParams p, int mutant_id) {
  const int mutant = active_mutant<kWithMutants>(mutant_id);
  DirectSlotState* st = slot_state(p, mutant);
  const uint32_t epoch = call_epoch(st, mutant);
  const uint32_t parity = mutant == kMutantSingleParity ? 0u : (epoch & 1u);
  if (mutant == kMutantSpinningCombineBlocks || mutant == kMutantRelaxedSpinningCombine) {
    // The mistake: no wait kernel; every combine block spins on the flags.
    if (threadIdx.x == 0) wait_for_sources<kWithMutants>(p, st, epoch, parity, mutant);
    __syncthreads();  // the acquire by thread 0 orders every thread's reads below
  }

  const int W = p.dcp_size, H = p.heads_per_rank, D = p.head_dim;
  const int64_t rows = recv_rows(p, mutant);
  const int64_t src_elems = rows * H * D;
  device::CombineView v;
  v.out_src = static_cast<const uint16_t*>(p.out_recv[p.group_rank]) + parity * W * src_elems;
  v.out_src_stride = src_elems;
  v.lse_src = p.lse_recv[p.group_rank] + int64_t{parity} * W * rows * H;
  v.lse_src_stride = rows * H;
  v.num_sources = W;
  v.num_tokens = p.num_tokens;
  v.heads = H;
  v.head_dim = D;
  v.output = static_cast<uint16_t*>(p.output);
  v.combined_lse = p.combined_lse;
  v.lse_base_e = p.lse_base_e != 0;
  const int warp = threadIdx.x / 32;
  device::combine_rows<kOut, kWithMutants>(v, blockIdx.x * kWarpsPerCombineBlock + warp,
                                           gridDim.x * kWarpsPerCombineBlock, mutant);

  __syncthreads();
  if (threadIdx.x != 0) return;
  if (atomicAdd(&st->combine_arrivals, 1u) + 1u != gridDim.x) return;
  st->combine_arrivals = 0;
  // Every block read combine_epoch before arriving above.
  if (mutant == kMutantUnjoinedSideStream) st->combine_epoch = epoch;
  if (p.status != nullptr) p.status->last_completed_epoch[p.slot] = epoch;
}

// --------------------------------------------------------------- small kernels

__global__ void delay_kernel(uint32_t ns) {
  const uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < ns) {
    __nanosleep(256);
  }
}

struct SlotFlags {
  uint32_t* flags[kMaxSlots];  // each slot's [2][W] flags in this rank's workspace
};

__global__ void reset_kernel(SlotFlags slot_flags, int num_slots, int dcp_size,
                             DirectSlotState* states, uint32_t epoch) {
  for (int slot = 0; slot < num_slots; ++slot) {
    uint32_t* flags = slot_flags.flags[slot];
    for (int i = threadIdx.x; i < 2 * dcp_size; i += blockDim.x) flags[i] = epoch;
    if (threadIdx.x == 0) {
      DirectSlotState s{};
      s.epoch = epoch;
      s.combine_epoch = epoch;
      states[slot] = s;
    }
  }
}

// ------------------------------------------------------------------- launch

// The dispatch launch; with p.pdl it may overlap the kernel before it on the
// stream (programmatic stream serialization), which is the producer's.
template <ElemType kLse, bool kWithMutants>
cudaError_t launch_dispatch(const DirectA2AParams& p, int mutant, int part, dim3 grid,
                            int threads, cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(threads);
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = p.pdl != 0 ? 1 : 0;
  return cudaLaunchKernelEx(&config, direct_dispatch_kernel<kLse, kWithMutants>, p, mutant, part);
}

template <bool kWithMutants>
cudaError_t dispatch_by_lse(const DirectA2AParams& p, int mutant, int part, dim3 grid,
                            int threads, cudaStream_t stream) {
  switch (p.lse_dtype) {
    case ElemType::kFp32:
      return launch_dispatch<ElemType::kFp32, kWithMutants>(p, mutant, part, grid, threads, stream);
    case ElemType::kFp16:
      return launch_dispatch<ElemType::kFp16, kWithMutants>(p, mutant, part, grid, threads, stream);
    case ElemType::kBf16:
      return launch_dispatch<ElemType::kBf16, kWithMutants>(p, mutant, part, grid, threads, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

// unjoined-side-stream: the sends to the peers on the side stream, forked from
// `stream` by an event (so after the inputs' producer), without PDL (an event
// orders them); then this rank's own rows on `stream`. The mistake: `stream`
// is made to wait for the side stream only under capture (which insists).
template <bool kWithMutants>
cudaError_t dispatch_on_side_stream(const DirectA2AParams& p, int mutant, int threads,
                                    cudaStream_t stream, const DirectSideStream& side) {
  if (cudaError_t err = cudaEventRecord(side.fork, stream); err != cudaSuccess) return err;
  if (cudaError_t err = cudaStreamWaitEvent(side.stream, side.fork, 0); err != cudaSuccess) {
    return err;
  }
  DirectA2AParams peers = p;
  peers.pdl = 0;
  const dim3 peer_grid(std::min(p.num_tokens, kSideBlocksPerDest), p.dcp_size - 1);
  if (cudaError_t err =
          dispatch_by_lse<kWithMutants>(peers, mutant, kDispatchPeers, peer_grid, threads, side.stream);
      err != cudaSuccess) {
    return err;
  }
  const dim3 self_grid(std::min(p.num_tokens, kMaxDispatchBlocksPerDest), 1);
  return dispatch_by_lse<kWithMutants>(p, mutant, kDispatchSelf, self_grid, threads, stream);
}

template <bool kWithMutants>
cudaError_t launch_impl(const DirectA2AParams& p, int mutant, cudaStream_t stream,
                        const DirectSideStream* side) {
  if (!validate_direct_params(p, mutant).empty()) return cudaErrorInvalidValue;
  const int vecs_per_row = p.heads_per_rank * p.head_dim / device::kVecElems;
  const int dispatch_threads = std::min(256, std::max(64, (vecs_per_row + 31) / 32 * 32));
  const dim3 dispatch_grid(std::min(p.num_tokens, kMaxDispatchBlocksPerDest), p.dcp_size);
  const bool side_stream = mutant == kMutantUnjoinedSideStream;
  if (side_stream && side == nullptr) return cudaErrorInvalidValue;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (side_stream) {
    if (cudaError_t err = cudaStreamIsCapturing(stream, &capture); err != cudaSuccess) return err;
  }
  const cudaError_t launched =
      side_stream ? dispatch_on_side_stream<kWithMutants>(p, mutant, dispatch_threads, stream, *side)
                  : dispatch_by_lse<kWithMutants>(p, mutant, kDispatchAll, dispatch_grid,
                                                  dispatch_threads, stream);
  if (launched != cudaSuccess) return launched;
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  if (mutant != kMutantSpinningCombineBlocks && mutant != kMutantRelaxedSpinningCombine) {
    direct_wait_kernel<kWithMutants><<<1, 32, 0, stream>>>(p, mutant);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  const int rows = p.num_tokens * p.heads_per_rank;
  const int combine_blocks =
      std::min(kMaxCombineBlocks, (rows + kWarpsPerCombineBlock - 1) / kWarpsPerCombineBlock);
  switch (p.out_dtype) {
    case ElemType::kFp16:
      direct_combine_kernel<ElemType::kFp16, kWithMutants>
          <<<combine_blocks, kCombineThreads, 0, stream>>>(p, mutant);
      break;
    case ElemType::kBf16:
      direct_combine_kernel<ElemType::kBf16, kWithMutants>
          <<<combine_blocks, kCombineThreads, 0, stream>>>(p, mutant);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  if (side_stream && capture == cudaStreamCaptureStatusActive) {
    // A capture must join every stream it forked, so under graphs it is right.
    if (cudaError_t err = cudaEventRecord(side->join, side->stream); err != cudaSuccess) return err;
    return cudaStreamWaitEvent(stream, side->join, 0);
  }
  return cudaSuccess;
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

}  // namespace

// ------------------------------------------------------------------- layout

size_t DirectWorkspaceLayout::out_region_bytes() const {
  return align_up(size_t{2} * dcp_size * max_tokens * heads_per_rank * head_dim * 2, 256);
}
size_t DirectWorkspaceLayout::lse_region_bytes() const {
  return align_up(size_t{2} * dcp_size * max_tokens * heads_per_rank * 4, 256);
}
size_t DirectWorkspaceLayout::flag_region_bytes() const {
  return align_up(size_t{2} * dcp_size * 4, 256);
}
size_t DirectWorkspaceLayout::slot_bytes() const {
  return out_region_bytes() + lse_region_bytes() + flag_region_bytes();
}
size_t DirectWorkspaceLayout::out_offset(int slot) const { return slot * slot_bytes(); }
size_t DirectWorkspaceLayout::lse_offset(int slot) const {
  return out_offset(slot) + out_region_bytes();
}
size_t DirectWorkspaceLayout::flags_offset(int slot) const {
  return lse_offset(slot) + lse_region_bytes();
}
size_t DirectWorkspaceLayout::total_bytes() const { return num_slots * slot_bytes(); }

// --------------------------------------------------------------- validation

std::string validate_direct_params(const DirectA2AParams& p, int mutant) {
  const int W = p.dcp_size, H = p.heads_per_rank, D = p.head_dim;
  if (p.out_dtype != ElemType::kFp16 && p.out_dtype != ElemType::kBf16) {
    return "output dtype must be fp16 or bf16";
  }
  if (p.lse_dtype != ElemType::kFp32 && p.lse_dtype != ElemType::kFp16 &&
      p.lse_dtype != ElemType::kBf16) {
    return "LSE dtype must be fp32, fp16 or bf16";
  }
  if (W < 1 || W > kMaxDcpSize) return "dcp size must be in [1, 8]";
  if (p.group_rank < 0 || p.group_rank >= W) return "group rank out of range";
  if (p.slot < 0 || p.slot >= kMaxSlots) return "slot out of range";
  if (H < 1) return "heads per rank must be >= 1";
  if (D < 8 || D % 8 != 0) return "head dim must be a positive multiple of 8";
  if (p.num_tokens < 1) return "tokens must be >= 1";
  if (p.num_tokens > p.max_tokens && mutant != kMutantNoCapacityCheck) {
    return std::to_string(p.num_tokens) + " tokens are over the workspace's capacity (max_tokens " +
           std::to_string(p.max_tokens) + ")";
  }
  if (p.out_token_stride < int64_t{W} * H * D || p.out_token_stride % 8 != 0) {
    return "output token stride must be >= W*H*D and a multiple of 8 elements";
  }
  if (p.lse_token_stride < int64_t{W} * H) return "LSE token stride must be >= W*H";
  if (p.partial_output == nullptr || p.partial_lse == nullptr || p.output == nullptr ||
      p.state == nullptr || p.state_slot0 == nullptr) {
    return "null input, output or state pointer";
  }
  if (!aligned16(p.partial_output) || !aligned16(p.output)) {
    return "partial_output and output must be 16-byte aligned";
  }
  const size_t lse_elem = p.lse_dtype == ElemType::kFp32 ? 4 : 2;
  if (reinterpret_cast<uintptr_t>(p.partial_lse) % lse_elem != 0) return "misaligned partial_lse";
  for (int d = 0; d < W; ++d) {
    if (p.out_recv[d] == nullptr || p.lse_recv[d] == nullptr || p.flags[d] == nullptr) {
      return "null receive pointer";
    }
    if (!aligned16(p.out_recv[d])) return "receive buffers must be 16-byte aligned";
  }
  if ((p.seq_lens == nullptr) != (p.query_start_loc == nullptr)) {
    return "seq_lens and query_start_loc must be given together";
  }
  if (p.seq_lens != nullptr && p.num_seqs < 1) return "num_seqs must be >= 1 with seq_lens";
  if (p.spin_timeout_ns == 0) return "spin timeout must be > 0";
  return "";
}

// ------------------------------------------------------------ host launchers

cudaError_t launch_direct_a2a(const DirectA2AParams& p, cudaStream_t stream) {
  return launch_impl<false>(p, kMutantNone, stream, nullptr);
}

cudaError_t launch_direct_a2a_mutant(const DirectA2AParams& p, int mutant, cudaStream_t stream,
                                     const DirectSideStream* side) {
  if (mutant != kMutantNone && find_gpu_mutant(mutant) == nullptr) return cudaErrorInvalidValue;
  return launch_impl<true>(p, mutant, stream, side);
}

cudaError_t launch_delay(uint32_t ns, cudaStream_t stream) {
  if (ns == 0) return cudaSuccess;
  delay_kernel<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError();
}

cudaError_t reset_direct_workspace(void* local_workspace, const DirectWorkspaceLayout& layout,
                                   DirectSlotState* states, uint32_t epoch, cudaStream_t stream) {
  if (local_workspace == nullptr || states == nullptr || layout.num_slots < 1 ||
      layout.num_slots > kMaxSlots) {
    return cudaErrorInvalidValue;
  }
  SlotFlags slot_flags{};
  for (int slot = 0; slot < layout.num_slots; ++slot) {
    slot_flags.flags[slot] = reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(local_workspace) +
                                                         layout.flags_offset(slot));
  }
  reset_kernel<<<1, 64, 0, stream>>>(slot_flags, layout.num_slots, layout.dcp_size, states, epoch);
  return cudaGetLastError();
}

cudaError_t reset_direct_slot(void* local_workspace, const DirectWorkspaceLayout& layout,
                              DirectSlotState* states, int slot, uint32_t epoch,
                              cudaStream_t stream) {
  if (local_workspace == nullptr || states == nullptr || slot < 0 || slot >= layout.num_slots ||
      layout.num_slots > kMaxSlots) {
    return cudaErrorInvalidValue;
  }
  SlotFlags slot_flags{};
  slot_flags.flags[0] = reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(local_workspace) +
                                                    layout.flags_offset(slot));
  reset_kernel<<<1, 64, 0, stream>>>(slot_flags, 1, layout.dcp_size, states + slot, epoch);
  return cudaGetLastError();
}

}  // namespace dcp
