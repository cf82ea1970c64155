// Symmetric memory: one buffer of the same size on every rank of a group,
// mapped into every peer's address space, so a kernel can store straight into
// a peer's buffer. Behind this interface so another provider (NCCL windows,
// fabric handles for multi-node NVLink) can be added without touching the
// kernels: they only ever see the vector of peer pointers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "rendezvous.h"

namespace dcp {

class SymmetricBuffer {
 public:
  virtual ~SymmetricBuffer() = default;
  virtual std::string provider() const = 0;  // e.g. "cuda-ipc"
  virtual size_t bytes() const = 0;
  // This rank's own buffer (device memory, zeroed before any peer could map it).
  virtual void* local() const = 0;
  // Every group rank's buffer as mapped into this process, indexed by group
  // rank; peers()[group_rank] == local().
  virtual const std::vector<void*>& peers() const = 0;
  // Unmaps the peers' buffers (this rank's stays until destruction). A group
  // that frees its buffers calls this on every rank, then barriers, so no
  // buffer is freed while a peer still maps it.
  virtual void close_peers() = 0;
};

struct SymmetricRequest {
  size_t bytes = 0;
  int device = 0;            // CUDA device ordinal of this rank
  int global_rank = 0;       // for messages
  int group_rank = 0;        // index of this rank in `members`
  std::vector<int> members;  // global ranks of the group, ascending
  std::string key;           // unique per buffer: names the rendezvous exchanges
};

// CUDA IPC provider (cudaIpcGetMemHandle / cudaIpcOpenMemHandle). Works with
// ranks on distinct GPUs (peer access enabled; UsageError when two GPUs cannot
// reach each other) and with several ranks (processes) sharing one GPU.
// Collective over the group: every member calls it with the same request key.
// Throws HarnessError on CUDA or rendezvous failures.
std::unique_ptr<SymmetricBuffer> make_cuda_ipc_buffer(const SymmetricRequest& request,
                                                      Rendezvous& rendezvous);

}  // namespace dcp
