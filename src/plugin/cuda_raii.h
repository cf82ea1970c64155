// Owning wrappers for CUDA resources used by the GPU backend. Destructors
// ignore errors: after a device fault every CUDA call fails, and teardown must
// still reach every resource without throwing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "cuda_check.h"

namespace dcp {

// Device memory that only grows (ensure), so pointers stay stable while the
// size suffices; a growth is visible to callers through data() changing.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }

  void ensure(size_t bytes, int rank) {
    if (bytes <= bytes_) return;
    reset();
    CUDA_CHECK(rank, HarnessError, cudaMalloc(&ptr_, bytes));
    bytes_ = bytes;
  }
  void reset() {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory (asynchronous copies need it to stay asynchronous).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept { swap(o); }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    swap(o);
    return *this;
  }

  void ensure(size_t bytes, int rank) {
    if (bytes <= bytes_) return;
    reset();
    CUDA_CHECK(rank, HarnessError, cudaMallocHost(&ptr_, bytes));
    bytes_ = bytes;
  }
  void reset() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void swap(PinnedBuffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() = default;
  ~Stream() {
    if (s_ != nullptr) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  // greatest_priority: the device's greatest stream priority, so this
  // stream's blocks are placed before the pending blocks of default-priority
  // streams (the SM-pressure kernel's, under MPS).
  void create(int rank, bool greatest_priority = false) {
    int least = 0, greatest = 0;
    if (greatest_priority) {
      CUDA_CHECK(rank, HarnessError, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    }
    CUDA_CHECK(rank, HarnessError,
               cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, greatest));
  }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// An event: for ordering only by default, timed with cudaEventDefault.
class Event {
 public:
  Event() = default;
  ~Event() {
    if (e_ != nullptr) cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void create(int rank, unsigned flags = cudaEventDisableTiming) {
    CUDA_CHECK(rank, HarnessError, cudaEventCreateWithFlags(&e_, flags));
  }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

class GraphExec {
 public:
  GraphExec() = default;
  ~GraphExec() { reset(); }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  void reset(cudaGraphExec_t e = nullptr) {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    exec_ = e;
  }
  cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace dcp
