#include "families.h"

#include "plan.h"

namespace dcp {

const std::vector<CaseFamily>& case_families() {
  static const std::vector<CaseFamily> families = {
      {"capacity", "T = max_tokens + 1: every rank must refuse the call before the exchange",
       "a kernel that accepts a call its workspace cannot hold (no-capacity-check)",
       [](const Case& c) { return over_capacity(c); }},
      {"epoch-2^31", "every slot's epoch starts a few calls below 2^31 and crosses it",
       "signed 32-bit epochs that overflow, flags compared by order as int32 "
       "(signed-epoch-order)",
       [](const Case& c) { return epoch_starts_below(c, kEpochSignBit); }},
      {"epoch-2^32", "every slot's epoch starts a few calls below 2^32 and wraps",
       "u32 epochs compared by order across the wrap, u64 flags truncated to 32 bits "
       "(stale-epoch-accepted)",
       [](const Case& c) { return epoch_starts_below(c, kEpochWrap); }},
      {"combined-lse",
       "every case of a kernel that declares combined-lse: its [T, H] LSE is checked too",
       "a combined LSE in the wrong base or not -inf for empty rows (combined-lse-base-2)",
       [](const Case&) { return true; }},
      {"slow-producer",
       "one producer kernel, the last thing before the op, writes both inputs over poison and "
       "its last token row ~30 us late (stream order must hide it)",
       "a kernel that reads its inputs on another stream or before the op's stream position",
       [](const Case& c) { return c.producer == Producer::kSlow; }},
      {"producer-pdl",
       "the same producer triggers programmatic completion at its start and the op is asked "
       "to launch with PDL (T = 1-2, eager, pipelined and under graphs)",
       "a PDL launch that reads its inputs before griddepcontrol.wait (no-grid-dependency-wait)",
       [](const Case& c) { return c.producer == Producer::kSlowPdl; }},
      {"graph-set",
       "one CUDA graph per token count (1, 8, T) on each slot over one workspace, replayed "
       "interleaved",
       "replays that read per-call state the host wrote at capture time, so a graph runs with "
       "another graph's token count (host-mapped-params)",
       [](const Case& c) {
         return c.mode == ExecMode::kGraphSet && graph_set_tokens(c).size() >= 2;
       }},
      {"allocation-churn",
       "the two-slot graph-set cases: after each capture a cudaMalloc block and every free byte "
       "of the device's stream-ordered pool are allocated, kept filled with a canary checked "
       "after every batch (GPU only: the host model has no graphs)",
       "a graph that still writes a block freed after its capture, e.g. a staging buffer "
       "reallocated for another T (resized-staging)",
       [](const Case& c) { return c.churn; }},
      {"sm-pressure",
       "two slots (in flight together when pipelined) while a co-running kernel holds 50% or 90% "
       "of the SMs the rank may "
       "use (GPU only: the host skips them by name; also alone as --suite pressure)",
       "spinning blocks that fill the SMs left, so the dispatch a peer waits for never starts "
       "(spinning-combine-blocks)",
       [](const Case& c) { return c.pressure > 0; }},
      {"memory-stress",
       "many calls, one and two slots, eager and pipelined with skew, while a co-running kernel "
       "hammers a scratch region with the access pattern `dcp-check litmus` found best on this "
       "GPU (GPU only: the host skips them by name; alone as --suite memstress)",
       "payload stores that become visible after the flag: a flag stored or polled without "
       "release/acquire or fence (relaxed-spinning-combine)",
       [](const Case& c) { return c.mstress; }},
      {"input-reuse",
       "right after each call returns, the caller's stream writes NaN over partial_output and "
       "partial_lse (before the peers' combines end); with skew, eager, pipelined and graphs",
       "a kernel that returns before its sends have read its inputs (unjoined-side-stream)",
       [](const Case& c) { return c.reuse; }},
      {"two-contexts",
       "two kernel contexts per rank (two layers, each with its own workspace), the case's ops "
       "alternating between them in a seeded order, eager, pipelined and under graphs",
       "global state shared by every context in the process, so one context's calls use "
       "another's (global-recv-buffers)",
       [](const Case& c) { return c.num_contexts == 2; }},
      {"init-faults",
       "every rank inits a fresh context while dcp-check fails one rank's init (it reports "
       "the failure without calling the kernel's init) or calls it late (100 ms in default, 2 s "
       "in full); every rank "
       "must stop with that rank's message, or wait for it, then the calls run on a fresh init",
       "an init that waits for its peers outside the host services without a bound, so a "
       "peer whose init failed hangs the group (unbounded-init-handshake)",
       [](const Case& c) { return c.init_fault != InitFault::kNone; }},
      {"guard-zones", "every case: canaries before and after the output and after every payload region",
       "a write out of bounds that hits no live buffer (write-past-output)",
       [](const Case&) { return true; }},
  };
  return families;
}

}  // namespace dcp
