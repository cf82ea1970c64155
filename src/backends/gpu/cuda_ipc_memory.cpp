// CUDA IPC symmetric memory (see symmetric_memory.h).
//
// Order of a build, the invariant being that no peer can write into a buffer
// before its owner zeroed it and no rank returns before every peer mapped its
// buffer: allocate -> zero -> synchronise -> allgather handles -> open every
// peer's handle -> barrier.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "cuda_check.h"
#include "errors.h"
#include "hex.h"
#include "symmetric_memory.h"

namespace dcp {
namespace {

// What a rank publishes about its buffer: process, GPU (PCI bus id, so peers
// resolve it whatever their device numbering), the raw pointer (usable as is
// by a peer in the same process) and the IPC handle.
struct IpcRecord {
  long pid = 0;
  std::string bus_id;
  uintptr_t pointer = 0;
  cudaIpcMemHandle_t handle{};
};

std::string encode(const IpcRecord& r) {
  return fmt::format("{} {} {} {}", r.pid, r.bus_id, r.pointer,
                     hex_encode(&r.handle, sizeof r.handle));
}

IpcRecord decode(const std::string& text, int member) {
  IpcRecord r;
  std::istringstream in(text);
  std::string handle_hex;
  in >> r.pid >> r.bus_id >> r.pointer >> handle_hex;
  if (!in || !hex_decode(handle_hex, &r.handle, sizeof r.handle)) {
    DCP_THROW(HarnessError, "malformed IPC record from global rank {}: '{}'", member, text);
  }
  return r;
}

std::string device_bus_id(int device, int rank) {
  char buf[64] = {};
  CUDA_CHECK(rank, HarnessError, cudaDeviceGetPCIBusId(buf, sizeof buf, device));
  return buf;
}

class CudaIpcBuffer final : public SymmetricBuffer {
 public:
  CudaIpcBuffer(const SymmetricRequest& req, Rendezvous& rendezvous);
  ~CudaIpcBuffer() override;
  void close_peers() override;
  CudaIpcBuffer(const CudaIpcBuffer&) = delete;
  CudaIpcBuffer& operator=(const CudaIpcBuffer&) = delete;

  std::string provider() const override { return "cuda-ipc"; }
  size_t bytes() const override { return bytes_; }
  void* local() const override { return local_; }
  const std::vector<void*>& peers() const override { return peers_; }

 private:
  void* open_peer(const IpcRecord& rec, int member);

  int device_ = 0;
  int rank_ = 0;
  size_t bytes_ = 0;
  void* local_ = nullptr;
  std::vector<void*> peers_;
  std::vector<void*> opened_;  // handles this process opened (closed on destruction)
};

CudaIpcBuffer::CudaIpcBuffer(const SymmetricRequest& req, Rendezvous& rendezvous)
    : device_(req.device), rank_(req.global_rank), bytes_(req.bytes) {
  DCP_CHECK(req.bytes > 0, HarnessError, "symmetric buffer '{}' of 0 bytes", req.key);
  DCP_CHECK(req.group_rank >= 0 && req.group_rank < static_cast<int>(req.members.size()),
            HarnessError, "group rank {} outside a group of {}", req.group_rank,
            req.members.size());
  CUDA_CHECK(rank_, HarnessError, cudaSetDevice(device_));
  CUDA_CHECK(rank_, HarnessError, cudaMalloc(&local_, bytes_));
  try {
    CUDA_CHECK(rank_, HarnessError, cudaMemset(local_, 0, bytes_));
    CUDA_CHECK(rank_, HarnessError, cudaDeviceSynchronize());
    IpcRecord mine;
    mine.pid = static_cast<long>(getpid());
    mine.bus_id = device_bus_id(device_, rank_);
    mine.pointer = reinterpret_cast<uintptr_t>(local_);
    CUDA_CHECK(rank_, HarnessError, cudaIpcGetMemHandle(&mine.handle, local_));
    const std::vector<std::string> all =
        rendezvous.allgather(req.key + "/handles", req.members, encode(mine));
    DCP_CHECK(all.size() == req.members.size(), HarnessError,
              "rendezvous '{}' returned {} records for {} members", req.key, all.size(),
              req.members.size());
    peers_.resize(all.size(), nullptr);
    for (size_t i = 0; i < all.size(); ++i) {
      if (static_cast<int>(i) == req.group_rank) {
        peers_[i] = local_;
      } else {
        peers_[i] = open_peer(decode(all[i], req.members[i]), req.members[i]);
      }
    }
    rendezvous.barrier(req.key + "/mapped", req.members);
  } catch (...) {
    for (void* p : opened_) cudaIpcCloseMemHandle(p);
    cudaFree(local_);
    throw;
  }
}

void* CudaIpcBuffer::open_peer(const IpcRecord& rec, int member) {
  if (rec.pid == static_cast<long>(getpid())) {
    // A peer in this very process (tests): its pointer is already ours.
    return reinterpret_cast<void*>(rec.pointer);
  }
  const std::string my_bus = device_bus_id(device_, rank_);
  if (rec.bus_id != my_bus) {
    int peer_device = -1;
    CUDA_CHECK(rank_, HarnessError, cudaDeviceGetByPCIBusId(&peer_device, rec.bus_id.c_str()));
    int can_access = 0;
    CUDA_CHECK(rank_, HarnessError, cudaDeviceCanAccessPeer(&can_access, device_, peer_device));
    if (!can_access) {
      DCP_THROW(UsageError,
                "rank {} on GPU {} cannot access GPU {} of rank {} (no peer-to-peer path): the "
                "direct path needs NVLink or PCIe P2P between the GPUs of a DCP group",
                rank_, my_bus, rec.bus_id, member);
    }
    const cudaError_t err = cudaDeviceEnablePeerAccess(peer_device, 0);
    if (err == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // not sticky; clear it
    } else {
      CUDA_CHECK(rank_, HarnessError, err);
    }
  }
  void* ptr = nullptr;
  CUDA_CHECK(rank_, HarnessError,
             cudaIpcOpenMemHandle(&ptr, rec.handle, cudaIpcMemLazyEnablePeerAccess));
  opened_.push_back(ptr);
  return ptr;
}

CudaIpcBuffer::~CudaIpcBuffer() {
  // Errors are ignored: after a device fault the context is gone and every
  // call fails, and a destructor must not throw.
  cudaSetDevice(device_);
  close_peers();
  cudaFree(local_);
}

void CudaIpcBuffer::close_peers() {
  cudaSetDevice(device_);
  for (void* p : opened_) cudaIpcCloseMemHandle(p);
  opened_.clear();
  for (void*& p : peers_) p = p == local_ ? p : nullptr;
}

}  // namespace

std::unique_ptr<SymmetricBuffer> make_cuda_ipc_buffer(const SymmetricRequest& request,
                                                      Rendezvous& rendezvous) {
  return std::make_unique<CudaIpcBuffer>(request, rendezvous);
}

}  // namespace dcp
