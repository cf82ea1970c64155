// Deliberately broken variants ("mutants") of the direct kernel, for
// `dcp-check selftest`. Each is one realistic mistake this kind of
// kernel really has. They exist only in the kernels instantiated by
// launch_direct_a2a_mutant (template flag kWithMutants); the normal launch
// instantiates the kernels without them, so no normal command can reach one.
// Plain C++: the table is read by src/ and the ids by the kernels.
#pragma once

#include <string_view>

namespace dcp {

enum GpuMutantId : int {
  kMutantNone = 0,
  kMutantSignalBeforePayload = 1,
  kMutantSingleParity = 2,
  kMutantStaleEpochAccepted = 3,
  kMutantSharedSlotEpoch = 4,
  kMutantRelaxedOrdering = 5,
  kMutantIgnoreOutStride = 6,
  kMutantIgnoreLseStride = 7,
  kMutantLastRankHeadOffByOne = 8,
  kMutantWrongSourcePosition = 9,
  kMutantEmptyNotMasked = 10,
  kMutantMaskedRowsRead = 11,
  kMutantNoBaseConversion = 12,
  kMutantHalfAccumulation = 13,
  kMutantUnnormalisedWithNegInf = 14,
  kMutantDropLastOddToken = 15,
  kMutantWritePastOutput = 16,
  kMutantSignedEpochOrder = 17,
  kMutantNoCapacityCheck = 18,
  kMutantCombinedLseBase2 = 19,
  kMutantNoGridDependencyWait = 20,
  kMutantHostMappedParams = 21,
  kMutantSpinningCombineBlocks = 22,
  kMutantUnjoinedSideStream = 23,
  kMutantGlobalRecvBuffers = 24,
  kMutantUnboundedInitHandshake = 25,
  kMutantResizedStaging = 26,
  kMutantNoArrivalFence = 27,
  kMutantReadFarPastInput = 28,
  kMutantRelaxedSpinningCombine = 29,
};

// Why the built-in's flag-ordering mutants are not catchable on a shared GPU.
inline constexpr std::string_view kReaderAfterWaitKernel =
    "measured on one H200 under MPS (docs/results/2026-12-06-h200-litmus.md): between processes "
    "sharing a GPU a payload does become visible after a relaxed flag, but this kernel reads the "
    "payload in a combine kernel launched after its wait kernel ended, microseconds after the "
    "flag, by when the stores have landed; it survived the memory-stress family at --world 2 "
    "and 4 (relaxed-spinning-combine, which reads right after its poll, was caught). It needs "
    "ranks on distinct GPUs";

struct GpuMutantInfo {
  int id;
  std::string_view name;
  std::string_view kind;  // protocol, memory-ordering, indexing, masking, arithmetic, sizing,
                         // forward-progress
  std::string_view description;
  bool catchable_on_shared_gpu;         // false: ranks sharing one GPU cannot expose it
  std::string_view uncatchable_reason;  // why, when the flag is false
  // Ranks sharing a GPU expose it only when they run at once (MPS), not
  // time-sliced (where it is caught only when a slice happens to end mid-call).
  bool needs_concurrent_ranks = false;
  int min_sources = 2;  // the smallest DCP group that can expose it
  // The case family (cases/families.h) that exists to catch it, or "" when
  // the suites' ordinary axes do.
  std::string_view family = "";
  // The suite that holds the family's cases when the default suites do not
  // ("" : they do); selftest with another suite reports it not catchable there.
  std::string_view suite = "";
  // The tool that exists to catch it when no suite can ("" none): selftest,
  // which runs no tool, reports it not catchable there.
  std::string_view needs_tool = "";
};

inline constexpr GpuMutantInfo kGpuMutants[] = {
    {kMutantSignalBeforePayload, "signal-before-payload", "protocol",
     "each destination is signalled by its first dispatch block before any payload is "
     "written; a peer already waiting combines stale receive buffers (exposed when ranks run "
     "concurrently: distinct GPUs or MPS; time-sliced ranks expose it only when a slice ends "
     "mid-dispatch)",
     true, "", /*needs_concurrent_ranks=*/true},
    {kMutantSingleParity, "single-parity", "protocol",
     "parity is always 0: a rank that finished call e overwrites a peer's half (and flag) that "
     "the peer still reads or waits on for call e (pipelined / graph batches, skew)",
     true, ""},
    {kMutantStaleEpochAccepted, "stale-epoch-accepted", "protocol",
     "the wait accepts flag >= epoch - 2 (wraparound-safe), i.e. the previous use of this "
     "parity, so a late peer's stale payload is combined",
     true, ""},
    {kMutantSharedSlotEpoch, "shared-slot-epoch", "protocol",
     "every ubatch slot uses slot 0's epoch and counters; slots run on their own streams, so "
     "two in-flight calls race on one epoch (two-slot pipelined / graph batches)",
     true, ""},
    {kMutantRelaxedOrdering, "relaxed-ordering", "memory-ordering",
     "flags stored and polled with relaxed system-scope accesses and no fences: the payload may "
     "become visible after the flag",
     false,
     kReaderAfterWaitKernel,
     /*needs_concurrent_ranks=*/true, 2, "memory-stress", "memstress"},
    {kMutantIgnoreOutStride, "ignore-out-stride", "indexing",
     "partial_output rows are addressed with W*H*D instead of the padded token stride", true, ""},
    {kMutantIgnoreLseStride, "ignore-lse-stride", "indexing",
     "partial_lse rows are addressed with W*H instead of the padded token stride", true, ""},
    {kMutantLastRankHeadOffByOne, "last-rank-head-off-by-one", "indexing",
     "the slice sent to the last group rank starts one head early (payload and LSE)", true, ""},
    {kMutantWrongSourcePosition, "wrong-source-position", "indexing",
     "dispatch writes into the destination's receive row of index d (the destination) instead "
     "of r (the source)",
     true, ""},
    {kMutantEmptyNotMasked, "empty-not-masked", "masking",
     "seq_lens is ignored: rows of empty KV shards (NaN garbage) are combined", true, ""},
    {kMutantMaskedRowsRead, "masked-rows-read", "masking",
     "zero-weight sources are still read and multiplied by 0 (masked payloads are copied "
     "too): NaN garbage turns the output into NaN",
     true, ""},
    {kMutantNoBaseConversion, "no-base-conversion", "arithmetic",
     "base-e LSEs are used as base 2 (the log2(e) factor is missing)", true, ""},
    {kMutantHalfAccumulation, "half-accumulation", "arithmetic",
     "the weighted sum is rounded to the 16-bit output type after every source instead of "
     "accumulating in fp32",
     true, ""},
    {kMutantUnnormalisedWithNegInf, "unnormalised-with-neg-inf", "arithmetic",
     "weights are divided by their sum only when every source is finite; with one -inf source "
     "the others keep unnormalised weights",
     true, "", false, /*min_sources=*/3},
    {kMutantDropLastOddToken, "drop-last-odd-token", "sizing",
     "the combine walks tokens in pairs without a tail: the last token of an odd count is "
     "never written",
     true, ""},
    {kMutantWritePastOutput, "write-past-output", "sizing",
     "the combine's row bound is off by one: the last row is stored again one row further, D "
     "elements past the end of the output (every element of the output is right; only a "
     "guard zone sees it)",
     true, "", false, 2, "guard-zones"},
    {kMutantSignedEpochOrder, "signed-epoch-order", "protocol",
     "the wait accepts (int32)flag >= (int32)epoch (counters kept as int, compared by order): "
     "once the epoch passes 2^31 it is negative, the previous use's positive flag satisfies it "
     "and stale payloads are combined; only the cases starting just below 2^31 reach it",
     true, "", false, 2, "epoch-2^31"},
    {kMutantNoCapacityCheck, "no-capacity-check", "sizing",
     "a call with T > max_tokens is accepted: the receive rows of the last source run into the "
     "next region (LSE, flags); only the capacity cases (T = max_tokens + 1) reach it",
     true, "", false, 2, "capacity"},
    {kMutantCombinedLseBase2, "combined-lse-base-2", "arithmetic",
     "the combined LSE is written in base 2 (the receive buffers' base) for base-e inputs: "
     "every output element is right; only the combined-LSE check sees it",
     true, "", false, 2, "combined-lse"},
    {kMutantNoGridDependencyWait, "no-grid-dependency-wait", "memory-ordering",
     "asked for PDL (DCP_CALL_PDL), dispatch is launched with programmatic stream "
     "serialization but reads its inputs without griddepcontrol.wait: it reads them while the "
     "producer still writes (poison); without PDL stream order hides it, so only the PDL "
     "producer cases reach it",
     true, "", false, 2, "producer-pdl"},
    {kMutantHostMappedParams, "host-mapped-params", "indexing",
     "the receive rows are packed by the token count read at run time from a per-slot word in "
     "mapped pinned host memory that call() writes, instead of max_tokens: eager calls and one "
     "graph per slot are right, but a graph replayed after its slot captured one of fewer tokens "
     "overlaps its sources' rows (only the graph-set cases reach it)",
     true, "", false, 2, "graph-set"},
    {kMutantSpinningCombineBlocks, "spinning-combine-blocks", "forward-progress",
     "no one-block wait kernel: every combine block (up to 48) spins on the flags itself. With "
     "two slots in flight and most of the rank's SMs taken by other work, the spinning blocks "
     "fill what is left and the dispatch a peer waits for never starts: both ranks hang (only "
     "the SM-pressure cases reach it; ranks sharing a GPU need MPS for their partitions)",
     true, "", /*needs_concurrent_ranks=*/true, 2, "sm-pressure"},
    {kMutantUnjoinedSideStream, "unjoined-side-stream", "protocol",
     "the sends to the peers run on an internal side stream (at most 4 blocks per "
     "destination) forked from the caller's stream by an event, and the call returns without "
     "making the caller's stream wait for them (joined only under graph capture, which insists); "
     "this rank's own rows are copied on the caller's stream. A caller that overwrites its "
     "inputs right after the call (the reuse cases) has a late rank send NaN to its peers",
     true, "", false, 2, "input-reuse"},
    {kMutantGlobalRecvBuffers, "global-recv-buffers", "protocol",
     "the plugin keeps this rank's own receive buffers in a process-wide singleton (per group "
     "and shape) that the first context's init sets; flags and peers' buffers stay the "
     "context's. With one context per process it is the correct kernel; a second context's "
     "calls combine the first context's stale payloads (only the two-contexts cases reach it)",
     true, "", false, 2, "two-contexts"},
    {kMutantUnboundedInitHandshake, "unbounded-init-handshake", "protocol",
     "init says hello through the workspace (one word per rank in an extra control region, "
     "written into every peer's copy) and polls its own copy until every peer's hello arrived, "
     "without a bound and outside the host services: a peer whose init failed leaves the others "
     "in init forever (only the init-fault cases reach it; a late peer is waited for correctly)",
     true, "", false, 2, "init-faults"},
    {kMutantResizedStaging, "resized-staging", "sizing",
     "the combine writes into a per-slot staging buffer sized to the call's T, copied to the "
     "output at the end of the call; a call of another T reallocates it from the device's "
     "stream-ordered pool (kept cached, as a framework allocator keeps its blocks) and frees "
     "the old block, which a graph captured before still writes. Every output is right; only "
     "allocation churn, which hands the freed block to someone else, sees it (the graph-set "
     "cases with churn)",
     true, "", false, 2, "allocation-churn"},
    {kMutantNoArrivalFence, "no-arrival-fence", "memory-ordering",
     "each dispatch block counts itself done (atomicAdd after __syncthreads) without a "
     "__threadfence_system() first; the last block still fences and releases the flag, but the "
     "other blocks' payload stores are not ordered before their count, so a peer may read "
     "payload that is not there yet (the classic threadFenceReduction mistake)",
     false,
     kReaderAfterWaitKernel,
     /*needs_concurrent_ranks=*/true, 2, "memory-stress", "memstress"},
    {kMutantReadFarPastInput, "read-far-past-input", "indexing",
     "the dispatch's first thread reads one word 1 TiB past the start of partial_output (a row "
     "offset taken in bytes and scaled again), outside every allocation, and never uses the value: "
     "every output is right. Caught by --sanitize memcheck only, which names the kernel, the "
     "access and the address; without it the read faults as an illegal address (a trap that "
     "names no access) or, where something happens to be mapped there, goes unseen",
     true, "", false, 2, "", "", "--sanitize memcheck"},
    {kMutantRelaxedSpinningCombine, "relaxed-spinning-combine", "memory-ordering",
     "the upstream shape with relaxed flags (KERNELS.md failure mode 12): no wait kernel, every "
     "combine block's thread 0 polls the flags with relaxed loads and the block reads the "
     "payload right after; the last dispatch block stores the flag relaxed with no fence before "
     "it or before the blocks' arrival count: a peer may read payload older than the flag",
     true, "", /*needs_concurrent_ranks=*/true, 2, "memory-stress", "memstress"},
};

inline const GpuMutantInfo* find_gpu_mutant(int id) {
  for (const auto& m : kGpuMutants) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

inline const GpuMutantInfo* find_gpu_mutant(std::string_view name) {
  for (const auto& m : kGpuMutants) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

}  // namespace dcp
