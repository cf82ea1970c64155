#include "alloc_churn.h"

#include <fmt/format.h>

#include <algorithm>

#include "canary_scan.h"
#include "guard_zone.h"

namespace dcp {

cudaError_t AllocChurn::free_blocks(std::vector<Block>& blocks, cudaStream_t s) {
  cudaError_t first = cudaSuccess;
  for (const Block& b : blocks) {
    const cudaError_t err = b.pooled ? cudaFreeAsync(b.ptr, s) : cudaFree(b.ptr);
    if (first == cudaSuccess) first = err;
  }
  blocks.clear();
  return first;
}

cudaError_t AllocChurn::release(cudaStream_t s) {
  const cudaError_t retired = free_blocks(retired_, s);
  const cudaError_t live = free_blocks(blocks_, s);
  return retired != cudaSuccess ? retired : live;
}

namespace {

uint64_t pool_bytes(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  uint64_t v = 0;
  return cudaMemPoolGetAttribute(pool, attr, &v) == cudaSuccess ? v : 0;
}

size_t pow2_floor(uint64_t v) { return v == 0 ? 0 : size_t{1} << (63 - __builtin_clzll(v)); }

}  // namespace

// The previous blocks stay allocated (retired) until damage() checked them:
// so the new ones come from whatever was free (a block a kernel just gave
// back included), not from the previous churn blocks, and a replay that wrote
// a previous block before this capture is still seen.
cudaError_t AllocChurn::after_capture(size_t call_bytes, cudaStream_t s) {
  retired_.insert(retired_.end(), blocks_.begin(), blocks_.end());
  blocks_.clear();
  const size_t top = std::clamp(call_bytes, kMinBytes, kMaxBytes);
  Block whole{nullptr, top, false};
  cudaError_t err = cudaMalloc(&whole.ptr, whole.bytes);
  if (err == cudaSuccess) blocks_.push_back(whole);
  int device = 0;
  cudaMemPool_t pool = nullptr;
  if (err == cudaSuccess) err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetMemPool(&pool, device);
  // The pool's free bytes (reserved, not in use), soaked up in blocks of the
  // largest power of two that fits, until less than the smallest is left. A
  // block the pool had to grow for means no free region was that large: the
  // following blocks are at most half its size.
  size_t limit = kMaxBytes;
  for (int n = 0; err == cudaSuccess && n < kMaxPoolBlocks; ++n) {
    const uint64_t reserved = pool_bytes(pool, cudaMemPoolAttrReservedMemCurrent);
    const uint64_t used = pool_bytes(pool, cudaMemPoolAttrUsedMemCurrent);
    Block b{nullptr, std::min(limit, pow2_floor(reserved > used ? reserved - used : 0)), true};
    if (b.bytes < kMinBytes) break;
    err = cudaMallocAsync(&b.ptr, b.bytes, s);
    if (err != cudaSuccess) break;
    blocks_.push_back(b);
    if (pool_bytes(pool, cudaMemPoolAttrReservedMemCurrent) > reserved) limit = b.bytes / 2;
  }
  for (const Block& b : blocks_) {
    if (err != cudaSuccess) break;
    err = cudaMemsetAsync(b.ptr, kGuardCanary, b.bytes, s);
  }
  return err;
}

// Each block compared with the canary on the device (canary_scan.h): one
// small copy of the verdicts and one sync before the refills, however many
// MiB the blocks hold (then one more sync for the refills and frees).
cudaError_t AllocChurn::damage(cudaStream_t s, std::vector<std::string>* out) {
  std::vector<Block> all = blocks_;
  all.insert(all.end(), retired_.begin(), retired_.end());
  if (all.size() > scan_capacity_) {
    if (scans_ != nullptr) cudaFree(scans_);  // every stream is idle (the contract)
    scans_ = nullptr;
    scan_capacity_ = 0;
    if (cudaError_t err =
            cudaMalloc(reinterpret_cast<void**>(&scans_), all.size() * sizeof(CanaryScan));
        err != cudaSuccess) {
      return err;
    }
    scan_capacity_ = all.size();
  }
  for (size_t i = 0; i < all.size(); ++i) {
    if (cudaError_t err = launch_canary_scan(all[i].ptr, all[i].bytes, kGuardCanary, &scans_[i], s);
        err != cudaSuccess) {
      return err;
    }
  }
  std::vector<CanaryScan> found(all.size());
  if (cudaError_t err = cudaMemcpyAsync(found.data(), scans_, all.size() * sizeof(CanaryScan),
                                        cudaMemcpyDeviceToHost, s);
      err != cudaSuccess) {
    return err;
  }
  if (cudaError_t err = cudaStreamSynchronize(s); err != cudaSuccess) return err;
  for (size_t i = 0; i < all.size(); ++i) {
    const Block& b = all[i];
    if (found[i].changed == 0) continue;
    if (out != nullptr) {
      out->push_back(fmt::format(
          "after the batch: a {} KiB block allocated ({}) after a capture was written: {} of "
          "its bytes changed, the first at +{} (a graph writes to memory freed after its "
          "capture)",
          b.bytes >> 10, b.pooled ? "cudaMallocAsync, the device's pool" : "cudaMalloc",
          found[i].changed, found[i].first));
    }
    if (cudaError_t err = cudaMemsetAsync(b.ptr, kGuardCanary, b.bytes, s); err != cudaSuccess) {
      return err;
    }
  }
  if (cudaError_t err = free_blocks(retired_, s); err != cudaSuccess) return err;
  return cudaStreamSynchronize(s);  // refills and frees done before any other stream runs
}

}  // namespace dcp
