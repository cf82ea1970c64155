// Protocol mutants of the host model, for `selftest`: each breaks
// one rule the direct path relies on, so a run that still passes proves the
// checker blind. Id 0 is the correct model. Ids are the values of
// BackendConfig::mutant for the host backend (the GPU mutants have their own table).
// Contract: each protocol mutant forces the interleaving that exposes it
// (mutant-only step barriers in HostBackend::run_call, no sleeps), so it is
// caught on every run of a suite with a case that can expose it.
#pragma once

#include <string_view>

namespace dcp {

enum HostMutantId : int {
  kHostMutantNone = 0,
  kHostMutantSingleParity =
      1,  // parity is always 0: a fast rank overwrites a half a peer still reads
  kHostMutantEarlySignal = 2,       // the flag is released before the payload is copied
  kHostMutantNoBaseConversion = 3,  // base-e LSEs are combined as if they were base 2
  kHostMutantStaleWait = 4,         // the wait accepts any nonzero flag instead of this epoch
  kHostMutantSignedEpochOrder = 5,  // the wait accepts (int32)flag >= (int32)epoch
  kHostMutantNoCapacityCheck = 6,   // a call with T > max_tokens is accepted, not refused
  kHostMutantCombinedLseBase2 = 7,  // the combined LSE is left in base 2 for base-e inputs
  kHostMutantNoGridDependencyWait = 8,  // under PDL, dispatch reads before the producer's last row
  kHostMutantHostMappedParams = 9,  // receive rows packed by the T of the slot's last call()
  kHostMutantUnjoinedSideStream = 10,  // group rank 0 sends to its peers after its call returned
  kHostMutantGlobalRecvBuffers = 11,  // own receive buffers are context 0's in every context
  kHostMutantUnboundedInitHandshake = 12,  // init waits for every peer's hello, without a bound
};

struct HostMutantInfo {
  int id;
  std::string_view name;
  std::string_view kind;  // protocol, memory-ordering, arithmetic (as in kernels/mutants.h)
  std::string_view description;
  std::string_view family = "";  // as in kernels/mutants.h
};

inline constexpr HostMutantInfo kHostMutants[] = {
    {kHostMutantSingleParity, "single-parity", "protocol",
     "one parity half instead of two: back-to-back calls overwrite a half still being read"},
    {kHostMutantEarlySignal, "early-signal", "memory-ordering",
     "flag stored before the payload copy: a peer combines stale data"},
    {kHostMutantNoBaseConversion, "no-base-conversion", "arithmetic",
     "base-e LSEs are not converted to base 2 before weighting"},
    {kHostMutantStaleWait, "stale-wait", "protocol",
     "the wait accepts any nonzero flag, so later calls read data from earlier epochs"},
    {kHostMutantSignedEpochOrder, "signed-epoch-order", "protocol",
     "the wait compares flag and epoch as int32 by order: past 2^31 the previous use's flag "
     "satisfies it (only the cases starting just below 2^31 reach it)", "epoch-2^31"},
    {kHostMutantNoCapacityCheck, "no-capacity-check", "sizing",
     "a call with T = max_tokens + 1 is accepted instead of refused (only the capacity cases "
     "reach it)", "capacity"},
    {kHostMutantCombinedLseBase2, "combined-lse-base-2", "arithmetic",
     "the combined LSE is left in base 2 for base-e inputs (every output element is right; "
     "only the combined-LSE check sees it)", "combined-lse"},
    {kHostMutantNoGridDependencyWait, "no-grid-dependency-wait", "memory-ordering",
     "under PDL (the prodpdl cases) dispatch reads the inputs without waiting for their "
     "producer: the last token row is still poison (without PDL stream order hides it)",
     "producer-pdl"},
    {kHostMutantHostMappedParams, "host-mapped-params", "indexing",
     "the receive rows are packed by the token count the slot's last call() was given (a host "
     "word read at run time) instead of max_tokens: a graph replayed after the slot captured "
     "one of fewer tokens overlaps its sources' rows (only the graph-set cases reach it)",
     "graph-set"},
    {kHostMutantUnjoinedSideStream, "unjoined-side-stream", "protocol",
     "the sends to the peers run on a side stream the caller's stream never waits for "
     "(joined only under graph capture); the model's group rank 0 sends only after its call "
     "returned, so a caller that reuses the inputs at once (the reuse cases) has it send NaN",
     "input-reuse"},
    {kHostMutantGlobalRecvBuffers, "global-recv-buffers", "protocol",
     "this rank's own receive buffers are a process-wide singleton (the first context's) while "
     "flags stay per context: the second context's calls combine the first's stale payloads "
     "(only the two-contexts cases reach it)",
     "two-contexts"},
    {kHostMutantUnboundedInitHandshake, "unbounded-init-handshake", "protocol",
     "the model's init writes a hello word into every peer's segment and waits, without a "
     "bound and outside the host services, until every peer's hello arrived: a peer whose "
     "init failed hangs the group in init (only the init-fault cases reach it)",
     "init-faults"},
};

}  // namespace dcp
