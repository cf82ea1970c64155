// The device checker (device_check.h): one kernel on the call's stream.
//   blocks [0, row_blocks): a warp per part of a (token, head) row (1 to 4
//               parts: check_warps_per_row), grid-stride over those blocks:
//               the row's weights (device_check_row.h, the per-source parts
//               a lane each), then the part's elements, a lane's 8 at once
//               (their table reads together; the arithmetic specialised
//               for the output's format); counts per block, one atomic
//               add each; a row with a mismatch sets its bit in the flags.
//   blocks [row_blocks, ...): the digest's 64 KiB supers of the output, then
//               of the combined LSE, four per block: a thread per 1 KiB
//               block, folded by the super's first thread (output_digest.h).
//   every block: the guard zones' words against the canary.
//   the last block to finish (a counter, after a fence): its first warp
//               builds the result in shared memory (the counts, the guard
//               verdict, the folded digest and, when something failed, the
//               first mismatches in the CPU checker's order: flagged rows
//               ascending, per row the combined LSE, then the dims), writes
//               it to the host's pinned DeviceCheckResult directly (no copy
//               launched), then zeroes everything of the scratch it used
//               (accumulators, counter, flags, supers) for the next call.
// Invariant: between checks the whole scratch buffer is zero, whatever row
// count used it last (the flags' length moves the supers). launch_device_check
// zeroes the buffer first when `zeroed` is false (a new one, or a check that
// was not seen complete).
#include "device_check_launch.h"

#include "device_check_row.h"
#include "output_digest.h"

namespace dcp {
namespace {

constexpr int kCheckThreads = 256;
constexpr int kWarps = kCheckThreads / 32;
constexpr int kBlocksPerSuper = static_cast<int>(kDigestSuper / kDigestBlock);  // 64
constexpr int kSupersPerBlock = kCheckThreads / kBlocksPerSuper;                 // 4

struct Accumulators {
  unsigned long long checked, mismatches, nan;
  uint32_t guard_damaged;
  uint32_t blocks_done;  // blocks past their work: the last one finishes
};

struct Scratch {
  Accumulators* acc;
  uint32_t* row_flags;
  uint64_t* supers;  // output supers, then LSE supers
};

constexpr size_t up16(size_t n) { return (n + 15) / 16 * 16; }

Scratch scratch_of(void* base, int rows) {
  Scratch s;
  auto* p = static_cast<uint8_t*>(base);
  s.acc = reinterpret_cast<Accumulators*>(p);
  size_t off = up16(sizeof(Accumulators));
  s.row_flags = reinterpret_cast<uint32_t*>(p + off);
  off += up16(DeviceCheckScratch::flag_words(rows) * sizeof(uint32_t));
  s.supers = reinterpret_cast<uint64_t*>(p + off);
  return s;
}

// The guard zones' words (output_region.h: before and after the output, and
// after the combined LSE when there is one) all hold the canary? Grid-strided.
__device__ bool guards_hold(const OutputRegion& region, uint8_t canary) {
  const auto* base = static_cast<const uint8_t*>(region.base);
  const size_t g = region.guard_bytes;
  const uint8_t* zones[3] = {base, base + g + region.out_bytes,
                             base + 2 * g + region.out_bytes + region.lse_bytes};
  const int num_zones = region.lse_bytes > 0 ? 3 : 2;
  const uint32_t want = 0x01010101u * canary;
  const size_t words = g / 4;  // guards are multiples of 256 bytes
  const size_t step = static_cast<size_t>(gridDim.x) * blockDim.x;
  bool ok = true;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < num_zones * words;
       i += step) {
    ok &= reinterpret_cast<const uint32_t*>(zones[i / words])[i % words] == want;
  }
  return ok;
}

// A row's setup by a whole warp (every lane gets the same CheckRow, the
// bits check_row_setup gives): the per-source parts a lane each (source_l2,
// then source_term and source_draw), gathered by shuffle for
// check_row_finish. Inlined: as a __noinline__ call (CUDA 13.0) the bound's
// scale read weights where it should read LSEs, so tolerances shrank on the
// device only (found by tests/gpu_check_agree, its guard since). Why is not
// established: ptxas reported a 0-byte frame for the call though its PTX
// declares a 384-byte local depot (counted in the kernel's 1,056 bytes).
// The kernel's stack was then 1,120 bytes, past the 1 KiB a context starts
// with, hence reserve_device_check_stack (816 since the screened count: it
// does nothing now, and guards a frame that grows again).
__device__ __forceinline__ void warp_row_setup(const DeviceCheckParams& p, int row, int lane,
                                            CheckRow& r) {
  const int w = p.dcp_size;
  double l2[kDeviceCheckMaxSources], term[kDeviceCheckMaxSources];
  RowDraw draw[kDeviceCheckMaxSources];
  const double l2_mine = lane < w ? source_l2(p, row, lane) : check_math::neg_inf();
  for (int src = 0; src < w; ++src) l2[src] = __shfl_sync(0xFFFFFFFFu, l2_mine, src);
  const double m = check_math::max_l2_of(w, l2);
  double term_mine = 0;
  RowDraw draw_mine;
  if (lane < w) {
    term_mine = source_term(l2_mine, m);
    draw_mine = source_draw(p, row, lane);
  }
  for (int src = 0; src < w; ++src) {
    term[src] = __shfl_sync(0xFFFFFFFFu, term_mine, src);
    draw[src].offset = __shfl_sync(0xFFFFFFFFu, draw_mine.offset, src);
    draw[src].scale_k = __shfl_sync(0xFFFFFFFFu, draw_mine.scale_k, src);
  }
  check_row_finish(p, l2, term, draw, r);
}

__device__ void check_some_rows(const DeviceCheckParams& p, const Scratch& s, int row_blocks) {
  __shared__ unsigned long long counts[3];  // checked, mismatches, NaN
  if (threadIdx.x < 3) counts[threadIdx.x] = 0;
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int rows = p.num_tokens * p.heads;
  const int parts = check_warps_per_row(rows, p.head_dim);
  ElementCounts c;
  for (int task = blockIdx.x * kWarps + static_cast<int>(threadIdx.x / 32); task < rows * parts;
       task += row_blocks * kWarps) {
    const int row = task / parts, part = task % parts;
    CheckRow r;
    warp_row_setup(p, row, lane, r);
    const unsigned long long bad_before = c.bad;
    if (p.combined_lse != nullptr && part == 0 && lane == 0) c.add(check_row_lse(p, r, row));
    const PartDims dims = check_row_part_dims(parts, part, lane);
    for (int first = dims.first; first < p.head_dim; first += dims.step * kCheckElementBatch) {
      const int n = check_batch_size(p.head_dim, first, dims.step);
      // The element arithmetic specialised per format; the row setup above
      // is not (one copy: this kernel's code already strains the
      // instruction cache, Nsight Compute's no_inst stalls).
      if (p.out_format == 1) {
        count_elements<true, kCheckElementBatch>(p, r, row, first, dims.step, n, c);
      } else {
        count_elements<false, kCheckElementBatch>(p, r, row, first, dims.step, n, c);
      }
    }
    if (__any_sync(0xFFFFFFFFu, c.bad != bad_before) && lane == 0) {
      atomicOr(&s.row_flags[row / 32], 1u << (row % 32));
    }
  }
  for (int off = 16; off > 0; off /= 2) {
    c.checked += __shfl_down_sync(0xFFFFFFFFu, c.checked, off);
    c.bad += __shfl_down_sync(0xFFFFFFFFu, c.bad, off);
    c.nan += __shfl_down_sync(0xFFFFFFFFu, c.nan, off);
  }
  if (lane == 0) {
    atomicAdd(&counts[0], c.checked);
    atomicAdd(&counts[1], c.bad);
    atomicAdd(&counts[2], c.nan);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(&s.acc->checked, counts[0]);
    if (counts[1] > 0) {
      atomicAdd(&s.acc->mismatches, counts[1]);
      atomicAdd(&s.acc->nan, counts[2]);
    }
  }
}

// digest_block of a whole block at a 16-byte-aligned p: the same rounds, its
// loads 128 bytes at a time (eight in flight, not one word after another).
__device__ uint64_t digest_whole_block(const uint8_t* p) {
  constexpr int kLoads = 8;  // 16 bytes each: four rounds
  DigestLanes lanes(kFnvOffset);
  const auto* q = reinterpret_cast<const uint4*>(p);
  for (size_t i = 0; i < kDigestBlock / 16; i += kLoads) {
    uint4 v[kLoads];
    DCP_UNROLL for (int k = 0; k < kLoads; ++k) v[k] = q[i + k];
    const auto lo = [](uint32_t a, uint32_t b) { return static_cast<uint64_t>(a) | uint64_t{b} << 32; };
    DCP_UNROLL for (int k = 0; k < kLoads; k += 2) {
      lanes.round(lo(v[k].x, v[k].y), lo(v[k].z, v[k].w), lo(v[k + 1].x, v[k + 1].y),
                  lo(v[k + 1].z, v[k + 1].w));
    }
  }
  return lanes.finish(kFnvOffset, kDigestBlock);
}

// Supers [4 (block - row_blocks), +4) of the output's, then the LSE's.
__device__ void hash_some_supers(const Scratch& s, const OutputRegion& region, int row_blocks) {
  __shared__ uint64_t blocks[kCheckThreads];
  const auto* out = static_cast<const uint8_t*>(region.base) + region.guard_bytes;
  const uint8_t* lse = out + region.out_bytes + region.guard_bytes;
  const size_t out_supers = digest_supers(region.out_bytes);
  const size_t all = out_supers + (region.lse_bytes > 0 ? digest_supers(region.lse_bytes) : 0);
  const size_t index = static_cast<size_t>(blockIdx.x - row_blocks) * kSupersPerBlock +
                       threadIdx.x / kBlocksPerSuper;
  const int local = static_cast<int>(threadIdx.x % kBlocksPerSuper);
  const bool is_out = index < out_supers;
  const uint8_t* p = is_out ? out : lse;
  const size_t n = is_out ? region.out_bytes : region.lse_bytes;
  const size_t super = is_out ? index : index - out_supers;
  const size_t nb = digest_blocks(n);
  const size_t b = super * kBlocksPerSuper + local;
  if (index < all && b < nb) {
    const uint8_t* at = p + b * kDigestBlock;
    const bool whole = n - b * kDigestBlock >= kDigestBlock && reinterpret_cast<uintptr_t>(at) % 16 == 0;
    blocks[threadIdx.x] = whole ? digest_whole_block(at) : digest_block(p, n, b);
  }
  __syncthreads();
  if (index >= all || local != 0) return;
  const size_t first = super * kBlocksPerSuper;
  const size_t count = first + kBlocksPerSuper < nb ? kBlocksPerSuper : nb - first;
  s.supers[index] = digest_fold(count, blocks + threadIdx.x, count);
}

// True in the block that finishes last: every other block's atomics, flags
// and supers are visible to it (each block fences before it counts itself).
__device__ bool last_to_finish(Accumulators* acc) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(&acc->blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last) __threadfence();  // acquire: the others' writes before any read below
  return last;
}

// The first mismatches, in the CPU checker's order (one warp).
__device__ void report_first(const DeviceCheckParams& p, const Scratch& s, DeviceCheckResult& res) {
  const int lane = static_cast<int>(threadIdx.x);
  const int rows = p.num_tokens * p.heads;
  for (int word = 0; word < static_cast<int>(DeviceCheckScratch::flag_words(rows)); ++word) {
    uint32_t flags = __ldcg(&s.row_flags[word]);
    while (flags != 0) {
      const int row = word * 32 + __ffs(flags) - 1;
      flags &= flags - 1;
      CheckRow r;
      warp_row_setup(p, row, lane, r);
      if (p.combined_lse != nullptr && lane == 0) {
        const ElementCheck e = check_row_lse(p, r, row);
        if (!e.pass) report_mismatch(res, p, row, -1, e);
      }
      __syncwarp();
      for (int d0 = 0; d0 < p.head_dim; d0 += 32) {
        const int d = d0 + lane;
        ElementCheck e;
        e.pass = true;
        if (d < p.head_dim) e = check_element(p, r, row, d);
        uint32_t fails = __ballot_sync(0xFFFFFFFFu, !e.pass);
        while (fails != 0) {  // in dim order: one lane reports at a time
          const int who = __ffs(fails) - 1;
          fails &= fails - 1;
          if (lane == who) report_mismatch(res, p, row, d, e);
          __syncwarp();
        }
        if (res.num_reported >= kDeviceCheckReported) return;
      }
    }
  }
}

// The last block's first warp: the result, to the host, then the scratch
// back to zero.
__device__ void finish(const DeviceCheckParams& p, const Scratch& s, const OutputRegion& region,
                       DeviceCheckResult* host_result) {
  __shared__ DeviceCheckResult res;  // its initializers do not run: zeroed here
  const int lane = static_cast<int>(threadIdx.x);
  constexpr int kWords = static_cast<int>(sizeof(DeviceCheckResult) / 4);
  static_assert(sizeof(DeviceCheckResult) % 4 == 0);
  for (int w = lane; w < kWords; w += 32) reinterpret_cast<uint32_t*>(&res)[w] = 0;
  __syncwarp();
  if (lane == 0) {
    res.num_checked = __ldcg(&s.acc->checked);
    res.num_mismatches = __ldcg(&s.acc->mismatches);
    res.num_nan = __ldcg(&s.acc->nan);
    res.guard_damaged = __ldcg(&s.acc->guard_damaged);
    res.num_reported = 0;
    res.written = 1;
    // call_output_digest's: the output's digest, then the LSE's folded in.
    const size_t out_supers = digest_supers(region.out_bytes);
    uint64_t h = digest_fold(region.out_bytes, s.supers, out_supers);
    if (region.lse_bytes > 0) {
      h = hash_in(h, digest_fold(region.lse_bytes, s.supers + out_supers,
                                 digest_supers(region.lse_bytes)));
    }
    res.digest = h;
  }
  __syncwarp();
  if (res.num_mismatches > 0) report_first(p, s, res);
  __syncwarp();
  const auto* from = reinterpret_cast<const uint32_t*>(&res);
  auto* to = reinterpret_cast<uint32_t*>(host_result);
  for (int w = lane; w < kWords; w += 32) to[w] = from[w];
  // Ready for the next call: everything this check used back to zero.
  const int words = static_cast<int>(DeviceCheckScratch::flag_words(p.num_tokens * p.heads));
  for (int w = lane; w < words; w += 32) s.row_flags[w] = 0;
  const size_t supers = digest_supers(region.out_bytes) +
                        (region.lse_bytes > 0 ? digest_supers(region.lse_bytes) : 0);
  for (size_t i = static_cast<size_t>(lane); i < supers; i += 32) s.supers[i] = 0;
  if (lane == 0) *s.acc = Accumulators{};
}

__global__ void __launch_bounds__(kCheckThreads)
    check_call(DeviceCheckParams p, Scratch s, OutputRegion region, uint8_t canary, int row_blocks,
               DeviceCheckResult* host_result) {
  if (!guards_hold(region, canary)) atomicOr(&s.acc->guard_damaged, 1u);
  if (static_cast<int>(blockIdx.x) < row_blocks) {
    check_some_rows(p, s, row_blocks);
  } else {
    hash_some_supers(s, region, row_blocks);
  }
  if (last_to_finish(s.acc) && threadIdx.x < 32) finish(p, s, region, host_result);
}

}  // namespace

size_t DeviceCheckScratch::bytes(int rows, size_t out_bytes, size_t lse_bytes) {
  return up16(sizeof(Accumulators)) +
         up16(flag_words(rows) * sizeof(uint32_t)) +
         sizeof(uint64_t) * (digest_supers(out_bytes) + (lse_bytes > 0 ? digest_supers(lse_bytes) : 0));
}

cudaError_t launch_device_check(const DeviceCheckParams& params, const OutputRegion& region,
                                uint8_t canary, void* scratch, size_t scratch_bytes,
                                bool zeroed, DeviceCheckResult* host_result,
                                cudaStream_t stream) {
  const int rows = params.num_tokens * params.heads;
  if (scratch_bytes < DeviceCheckScratch::bytes(rows, region.out_bytes, region.lse_bytes)) {
    return cudaErrorInvalidValue;
  }
  const Scratch s = scratch_of(scratch, rows);
  if (!zeroed) {
    const cudaError_t err = cudaMemsetAsync(scratch, 0, scratch_bytes, stream);
    if (err != cudaSuccess) return err;
  }
  const int tasks = rows * check_warps_per_row(rows, params.head_dim);
  int row_blocks = tasks > 0 ? (tasks + kWarps - 1) / kWarps : 1;
  if (row_blocks > 1024) row_blocks = 1024;
  const size_t supers = digest_supers(region.out_bytes) +
                        (region.lse_bytes > 0 ? digest_supers(region.lse_bytes) : 0);
  const int hash_blocks = static_cast<int>((supers + kSupersPerBlock - 1) / kSupersPerBlock);
  check_call<<<row_blocks + hash_blocks, kCheckThreads, 0, stream>>>(params, s, region, canary,
                                                                    row_blocks, host_result);
  return cudaGetLastError();
}

cudaError_t reserve_device_check_stack() {
  cudaFuncAttributes attr{};
  cudaError_t err = cudaFuncGetAttributes(&attr, check_call);
  size_t limit = 0;
  if (err == cudaSuccess) err = cudaDeviceGetLimit(&limit, cudaLimitStackSize);
  if (err != cudaSuccess || attr.localSizeBytes <= limit) return err;
  return cudaDeviceSetLimit(cudaLimitStackSize, attr.localSizeBytes);
}

}  // namespace dcp
