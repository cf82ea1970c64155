#include "alloc_churn.h"

#include <fmt/format.h>

#include <algorithm>

#include "guard_zone.h"

namespace dcp {

cudaError_t AllocChurn::release(cudaStream_t s) {
  cudaError_t first = cudaSuccess;
  for (const Block& b : blocks_) {
    const cudaError_t err = b.pooled ? cudaFreeAsync(b.ptr, s) : cudaFree(b.ptr);
    if (first == cudaSuccess) first = err;
  }
  blocks_.clear();
  return first;
}

cudaError_t AllocChurn::after_capture(size_t call_bytes, cudaStream_t s) {
  if (cudaError_t err = release(s); err != cudaSuccess) return err;
  const size_t top = std::clamp(call_bytes, kMinBytes, kMaxBytes);
  Block whole{nullptr, top, false};
  if (cudaError_t err = cudaMalloc(&whole.ptr, whole.bytes); err != cudaSuccess) return err;
  blocks_.push_back(whole);
  for (size_t bytes = kMinBytes; bytes <= top; bytes *= 2) {
    Block b{nullptr, bytes, true};
    if (cudaError_t err = cudaMallocAsync(&b.ptr, bytes, s); err != cudaSuccess) return err;
    blocks_.push_back(b);
  }
  for (const Block& b : blocks_) {
    if (cudaError_t err = cudaMemsetAsync(b.ptr, kGuardCanary, b.bytes, s); err != cudaSuccess) {
      return err;
    }
  }
  return cudaSuccess;
}

cudaError_t AllocChurn::damage(cudaStream_t s, std::vector<std::string>* out) {
  std::vector<uint8_t> host;
  for (const Block& b : blocks_) {
    host.resize(b.bytes);
    if (cudaError_t err = cudaMemcpyAsync(host.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost, s);
        err != cudaSuccess) {
      return err;
    }
    if (cudaError_t err = cudaStreamSynchronize(s); err != cudaSuccess) return err;
    const auto bad = std::find_if(host.begin(), host.end(),
                                  [](uint8_t v) { return v != kGuardCanary; });
    if (bad == host.end()) continue;
    const size_t changed = static_cast<size_t>(
        std::count_if(bad, host.end(), [](uint8_t v) { return v != kGuardCanary; }));
    if (out != nullptr) {
      out->push_back(fmt::format(
          "after the batch: a {} KiB block allocated ({}) after a capture was written: {} of "
          "its bytes changed, the first at +{} (a graph writes to memory freed after its "
          "capture)",
          b.bytes >> 10, b.pooled ? "cudaMallocAsync, the device's pool" : "cudaMalloc", changed,
          bad - host.begin()));
    }
    if (cudaError_t err = cudaMemsetAsync(b.ptr, kGuardCanary, b.bytes, s); err != cudaSuccess) {
      return err;
    }
  }
  return cudaSuccess;
}

}  // namespace dcp
