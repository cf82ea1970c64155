#include "sm_pressure_host.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "errors.h"
#include "launch_observer.h"
#include "worker_protocol.h"

namespace dcp {

SmPressure::SmPressure(int device, int rank, double spin_timeout_s)
    : rank_(rank),
      // Past the op's spin bound (so a kernel starved under pressure traps
      // first) and past the host deadline (spin bound + grace) and its hang
      // snapshot: a kernel with no spin bound of its own that is starved
      // under pressure is a hang diagnosed while it is stuck, not a pass
      // once the pressure gives up. Ends by itself if the host never stops it.
      max_ns_(static_cast<uint64_t>((spin_timeout_s + kDeadlineGraceS + 6.0) * 1e9)) {
  int device_sms = 0;
  CUDA_CHECK(rank, HarnessError,
             cudaDeviceGetAttribute(&device_sms, cudaDevAttrMultiProcessorCount, device));
  stream_.create(rank);
  launch_observer::name_stream(stream_.get(), "dcp-check SM pressure");
  // Measured, not read: under MPS the client's share may be smaller than the
  // device's count. Two blocks of 1024 threads fill an SM.
  words_.ensure(3 * sizeof(uint32_t), rank);
  uint32_t words[3] = {};
  const int probe = std::min(2 * device_sms, kMaxPressureBlocks);
  // Before any pressure runs: an op's first launch that grew local memory
  // would wait for the pressure kernel (measured: its whole bound).
  CUDA_CHECK(rank, HarnessError, launch_local_memory_reserve(stream_.get()));
  CUDA_CHECK(rank, HarnessError, cudaMemsetAsync(words_.data(), 0, sizeof words, stream_.get()));
  CUDA_CHECK(rank, HarnessError,
             launch_capacity_probe(static_cast<uint32_t*>(words_.data()), probe, 20'000'000,
                                   stream_.get()));
  CUDA_CHECK(rank, HarnessError, cudaMemcpyAsync(words, words_.data(), sizeof words,
                                                 cudaMemcpyDeviceToHost, stream_.get()));
  CUDA_CHECK(rank, HarnessError, cudaStreamSynchronize(stream_.get()));
  rank_sms_ = std::clamp(static_cast<int>(words[1]) / 2, 1, device_sms);
  device_sms_ = device_sms;
  CUDA_CHECK(rank, HarnessError,
             cudaDeviceGetAttribute(&shared_bytes_, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                    device));
  CUDA_CHECK(rank, HarnessError, set_sm_pressure_shared_limit(&shared_bytes_));
  void* host = nullptr;
  CUDA_CHECK(rank, HarnessError,
             cudaHostAlloc(&host, sizeof(PressureControl), cudaHostAllocMapped));
  host_ = static_cast<PressureControl*>(host);
  std::memset(host, 0, sizeof(PressureControl));
  void* dev = nullptr;
  CUDA_CHECK(rank, HarnessError, cudaHostGetDevicePointer(&dev, host, 0));
  dev_ = static_cast<PressureControl*>(dev);
}

SmPressure::~SmPressure() {
  stop();
  if (host_ != nullptr) cudaFreeHost(host_);
}

std::string SmPressure::start(int percent) {
  stop();
  // At least one SM stays free: a pressure that took them all would only
  // delay the op to its end, testing nothing.
  if (rank_sms_ < 2) {
    return fmt::format("pressure {}%: none (this rank holds {} SM at once)", percent, rank_sms_);
  }
  const int sms = std::clamp((rank_sms_ * percent + 99) / 100, 1, rank_sms_ - 1);
  int blocks = std::min(sms, kMaxPressureBlocks);
  int resident = launch_and_admit(blocks);
  // A block not resident when admission closed stays queued until an SM is
  // wholly free, and later grids queued behind it (under MPS, where peers
  // hold part of this rank's share: the op's dispatch never started). So
  // relaunch with only what became resident, until none is left queued.
  int relaunches = 0;
  while (resident > 0 && resident < blocks && relaunches < 3) {
    // Bounded: stop() waits until the queued blocks were placed and left; one
    // that took long (a peer holds the SMs) ends the relaunching.
    const auto stopping = std::chrono::steady_clock::now();
    stop();
    const bool slow = std::chrono::steady_clock::now() - stopping > std::chrono::milliseconds(100);
    blocks = resident;
    resident = launch_and_admit(blocks);
    ++relaunches;
    if (slow) break;
  }
  launch_observer::set_pressure_sms(resident);  // one 1024-thread block holds one SM
  note_ = fmt::format(
      "pressure {}%: {} of {} blocks of {} threads and {} KiB shared memory resident ({} SMs "
      "wanted of the {} this rank holds at once; the device has {}){}",
      percent, resident, blocks, kPressureThreads, shared_bytes_ / 1024, sms, rank_sms_,
      device_sms_, relaunches > 0 ? fmt::format(", after {} relaunches", relaunches) : "");
  return note_;
}

int SmPressure::launch_and_admit(int blocks) {
  std::memset(const_cast<uint8_t*>(host_->resident), 0, sizeof(host_->resident));
  host_->stop = 0;
  host_->closed = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  CUDA_CHECK(rank_, HarnessError,
             cudaMemsetAsync(words_.data(), 0, 2 * sizeof(uint32_t), stream_.get()));
  CUDA_CHECK(rank_, HarnessError,
             launch_sm_pressure(dev_, static_cast<uint32_t*>(words_.data()), blocks, max_ns_,
                                shared_bytes_, stream_.get()));
  running_ = true;
  // Bounded: the SMs may be busy with a peer's kernels on a shared GPU.
  auto count_resident = [&] {
    int n = 0;
    for (int i = 0; i < blocks; ++i) n += host_->resident[i];
    return n;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (count_resident() != blocks && std::chrono::steady_clock::now() <= deadline) {
    std::this_thread::yield();
  }
  host_->closed = 1;
  // A block admitted between the count and `closed` still holds its SM.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return count_resident();
}

void SmPressure::stop() {
  if (!running_) return;
  host_->stop = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  cudaStreamSynchronize(stream_.get());  // errors surface at the batch's own calls
  running_ = false;
  launch_observer::set_pressure_sms(0);
}

}  // namespace dcp
