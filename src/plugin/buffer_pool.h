// Buffers lent out and taken back when the last holder drops its share. The
// GPU backend copies each call's output region into a pinned buffer from its
// pool and hands that buffer to the check with the output (CallOutput), so
// the runner copies nothing and the next call copies into another buffer.
// Each lease holds the pool, so the pool outlives its leases. Thread-safe: a
// lease may be dropped on the check's thread while the runner takes another.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace dcp {

// Buffer: default-constructible, with ensure(bytes, rank) (grows, never
// shrinks) and bytes() (PinnedBuffer, cuda_raii.h).
template <class Buffer>
class BufferPool : public std::enable_shared_from_this<BufferPool<Buffer>> {
 public:
  // At most `max_spare` buffers are kept for reuse; more given back are freed.
  static std::shared_ptr<BufferPool> create(int rank, size_t max_spare) {
    return std::shared_ptr<BufferPool>(new BufferPool(rank, max_spare));
  }

  // A buffer of at least `bytes`: a spare one (the smallest that fits, else
  // the largest, grown), or a new one when none is spare.
  std::shared_ptr<Buffer> take(size_t bytes) {
    std::unique_ptr<Buffer> b = take_spare(bytes);
    if (b == nullptr) b = std::make_unique<Buffer>();
    b->ensure(bytes, rank_);
    return std::shared_ptr<Buffer>(b.release(),
                                   [pool = this->shared_from_this()](Buffer* p) { pool->give(p); });
  }

  size_t spare() const {
    const std::lock_guard<std::mutex> lock(mu_);
    return spare_.size();
  }

 private:
  BufferPool(int rank, size_t max_spare) : rank_(rank), max_spare_(max_spare) {
    spare_.reserve(max_spare);  // give() never allocates
  }

  std::unique_ptr<Buffer> take_spare(size_t bytes) {
    const std::lock_guard<std::mutex> lock(mu_);
    if (spare_.empty()) return nullptr;
    size_t pick = 0;
    for (size_t i = 1; i < spare_.size(); ++i) {
      const size_t have = spare_[i]->bytes(), best = spare_[pick]->bytes();
      const bool fits = have >= bytes, best_fits = best >= bytes;
      if (fits != best_fits ? fits : (fits ? have < best : have > best)) pick = i;
    }
    std::unique_ptr<Buffer> b = std::move(spare_[pick]);
    spare_[pick] = std::move(spare_.back());
    spare_.pop_back();
    return b;
  }

  void give(Buffer* p) {
    std::unique_ptr<Buffer> b(p);
    const std::lock_guard<std::mutex> lock(mu_);
    if (spare_.size() < max_spare_) spare_.push_back(std::move(b));
  }  // a buffer not kept is freed here

  const int rank_;
  const size_t max_spare_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Buffer>> spare_;
};

}  // namespace dcp
