// The direct DCP all-to-all + LSE combine (SPEC section 1): host-side view.
// Plain C++ (no CUDA syntax), the only part of kernels/direct_a2a.cu that src/
// sees. One call = three kernels on one stream: dispatch (write this rank's head
// slices into every peer's receive buffers, then release-signal each peer),
// wait (one block acquire-waits for every source's signal) and combine. Stream
// order between them replaces any grid-wide barrier, so no kernel ever needs
// all of its blocks co-resident, and only one block per slot ever spins.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "combine_math.h"
#include "wait_status.h"

namespace dcp {

// Per-slot state in this rank's own device memory (never mapped by peers).
// Invariant between calls: every counter is 0 (the last arriving block resets
// it), `epoch` is the epoch of the last call on this slot.
struct DirectSlotState {
  uint32_t epoch;                       // 0 at creation; +1 per call
  uint32_t dest_arrivals[kMaxDcpSize];  // dispatch blocks done per destination
  uint32_t dests_signalled;             // destinations signalled this call
  uint32_t combine_arrivals;            // combine blocks done this call
  uint32_t trap_reported;               // 1 once a block printed the trap line
  // Only the unjoined-side-stream mutant: the epoch as the caller's stream
  // counts it (its sends, on a side stream, count `epoch`); +1 per call too.
  uint32_t combine_epoch;
  uint32_t reserved[3];
};

// The unjoined-side-stream mutant's internal stream and events (one per slot,
// owned by its plugin context).
struct DirectSideStream {
  cudaStream_t stream;
  cudaEvent_t fork;  // recorded on the caller's stream at the call's start
  cudaEvent_t join;  // recorded after the sends; waited for only under capture
};

// Byte layout of one rank's symmetric workspace (identical on every rank, so a
// peer's pointer plus the same offset addresses the same region there):
//   for each slot: out recv [2][W][max_tokens][H][D] (16-bit out dtype),
//                  lse recv [2][W][max_tokens][H] fp32 (base 2, masked -> -inf),
//                  flags    [2][W] u32.
// Every region starts on a 256-byte boundary.
struct DirectWorkspaceLayout {
  int dcp_size = 0;
  int max_tokens = 0;
  int heads_per_rank = 0;
  int head_dim = 0;
  int num_slots = kMaxSlots;

  size_t out_region_bytes() const;  // one slot, both parities, every source
  size_t lse_region_bytes() const;
  size_t flag_region_bytes() const;
  size_t slot_bytes() const;
  size_t out_offset(int slot) const;
  size_t lse_offset(int slot) const;
  size_t flags_offset(int slot) const;
  size_t total_bytes() const;
};

// Everything one call needs, by value (trivially copyable). Build it with
// std::memset(&p, 0, sizeof p) first so two params compare with memcmp (the
// graph cache relies on that).
struct DirectA2AParams {
  // This rank's inputs: partial_output [T, W*H, D], partial_lse [T, W*H].
  const void* partial_output;
  const void* partial_lse;
  int64_t out_token_stride;  // elements, multiple of 8, >= W*H*D
  int64_t lse_token_stride;  // elements, >= W*H
  ElemType out_dtype;        // kFp16 or kBf16
  ElemType lse_dtype;        // kFp32, kFp16 or kBf16
  uint8_t lse_base_e;        // 1: natural log, 0: base 2
  uint8_t pdl;               // 1: the inputs' producer triggered early (DCP_CALL_PDL): dispatch
                             // is launched with programmatic stream serialization and
                             // executes griddepcontrol.wait before it reads any input
  int32_t num_tokens;            // T, 1 <= T <= max_tokens
  int32_t dcp_size;              // W <= kMaxDcpSize
  int32_t heads_per_rank;        // H
  int32_t head_dim;              // D, multiple of 8
  int32_t max_tokens;            // workspace capacity
  int32_t group_rank;            // r
  int32_t slot;                  // ubatch slot, < kMaxSlots
  int32_t members[kMaxDcpSize];  // global rank of each group rank (messages only)
  // Optional masking of empty KV shards (both null: nothing masked).
  const int32_t* seq_lens;         // [num_seqs]
  const int32_t* query_start_loc;  // [num_seqs + 1]
  int32_t num_seqs;
  // The slot's receive regions in every group rank's workspace, as mapped into
  // this process (index = group rank; [group_rank] is this rank's own).
  void* out_recv[kMaxDcpSize];
  float* lse_recv[kMaxDcpSize];
  uint32_t* flags[kMaxDcpSize];
  DirectSlotState* state;        // this slot's state (device memory)
  DirectSlotState* state_slot0;  // slot 0's state (only the shared-epoch mutant uses it)
  void* output;                  // [T, H, D] contiguous, out dtype
  float* combined_lse;           // [T, H] fp32 in the inputs' base, or null (not written)
  WaitStatus* status;            // device pointer to mapped pinned memory, or null
  uint64_t spin_timeout_ns;      // bounded wait before trapping
  // Only the host-mapped-params mutant: the slot's word in mapped pinned host
  // memory that its call() sets to T (device pointer), else null.
  const volatile int32_t* host_tokens;
};

// Empty string when `p` is launchable, else one line naming the problem
// (dtype, sizes, strides, alignment, W, slot, null pointers).
// `mutant` is 0 except for selftest's no-capacity-check, which skips T <= max_tokens.
std::string validate_direct_params(const DirectA2AParams& p, int mutant = 0);

// Enqueues dispatch + combine on `stream` (capturable: no allocation, no host
// sync). Returns cudaErrorInvalidValue when validate_direct_params fails, else
// the launch error.
cudaError_t launch_direct_a2a(const DirectA2AParams& p, cudaStream_t stream);

// The self-test variant: the same kernels instantiated with the mutant switch
// compiled in; `mutant` is one of kernels/mutants.h (0 behaves correctly). Only
// the built-in kernel's plugin entry reaches it, when selftest names a mutant.
// unjoined-side-stream needs `side` (the slot's); the others ignore it.
cudaError_t launch_direct_a2a_mutant(const DirectA2AParams& p, int mutant, cudaStream_t stream,
                                     const DirectSideStream* side = nullptr);

// One thread spins for `ns` nanoseconds of %globaltimer (per-rank skew).
cudaError_t launch_delay(uint32_t ns, cudaStream_t stream);

// Sets every slot's epoch to `epoch`, clears its counters, and stores `epoch`
// into every flag of this rank's own workspace (`local_workspace` is the
// local base pointer). The caller guarantees quiescence (group barriers around
// it) and synchronises the stream before the next call on any rank.
cudaError_t reset_direct_workspace(void* local_workspace, const DirectWorkspaceLayout& layout,
                                   DirectSlotState* states, uint32_t epoch, cudaStream_t stream);
// The same for one slot (`states` is the array of every slot's state).
cudaError_t reset_direct_slot(void* local_workspace, const DirectWorkspaceLayout& layout,
                              DirectSlotState* states, int slot, uint32_t epoch,
                              cudaStream_t stream);

}  // namespace dcp
