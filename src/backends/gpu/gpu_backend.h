// The GPU backend: this rank's side of the direct path (kernels/direct_a2a.h
// over CUDA IPC symmetric memory) or of the stock path (kernels/stock_a2a.h +
// NCCL), behind the RankBackend interface (backend.h).
//
// Streams: the direct path runs ubatch slot s on its own stream s, as DBO runs
// its ubatches, so two-slot pipelined and graph batches really overlap; the
// stock path runs everything on one stream (NCCL needs one issue order).
#pragma once

#include <memory>

#include "backend.h"
#include "rendezvous.h"

namespace dcp {

// Collective over cfg.members (rendezvous exchanges). Throws UsageError for a
// missing/unsuitable GPU, NCCL, or a stock path asked for ranks sharing a GPU;
// HarnessError for other setup failures.
std::unique_ptr<RankBackend> make_gpu_backend(const BackendConfig& cfg, Rendezvous& rendezvous);

}  // namespace dcp
