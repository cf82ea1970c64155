#include "memory_stress_host.h"

#include <fmt/format.h>

#include <algorithm>

#include "errors.h"
#include "launch_observer.h"

namespace dcp {

MemoryStress::MemoryStress(int device, int rank, const MemoryStressConfig& config)
    : rank_(rank), stress_(config.stress) {
  int sms = 0;
  CUDA_CHECK(rank, HarnessError, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  stress_.blocks = config.stress.blocks * sms;
  stream_.create(rank);
  launch_observer::name_stream(stream_.get(), "dcp-check memory stress");
  scratch_.ensure(size_t{stress_.scratch_words} * sizeof(uint32_t), rank);
  released_.ensure(sizeof(uint32_t), rank);
  // On the stress stream and waited for: the streams are non-blocking, so a
  // plain cudaMemset (legacy stream) would not be ordered before the first
  // stress kernel or release.
  CUDA_CHECK(rank, HarnessError,
             cudaMemsetAsync(scratch_.data(), 0, scratch_.bytes(), stream_.get()));
  CUDA_CHECK(rank, HarnessError,
             cudaMemsetAsync(released_.data(), 0, sizeof(uint32_t), stream_.get()));
  CUDA_CHECK(rank, HarnessError, cudaStreamSynchronize(stream_.get()));
  note_ = "memory stress: " + config.description;
}

// Counted from the releases enqueued so far, not from the kicks: a call that
// never released (an error mid-batch) delays no later stress past its bound.
void MemoryStress::kick(int calls) {
  const auto n = static_cast<uint32_t>(std::max(1, calls));
  CUDA_CHECK(rank_, HarnessError,
             launch_memory_stress(stress_, static_cast<uint32_t*>(scratch_.data()),
                                  static_cast<const uint32_t*>(released_.data()), releases_ + n,
                                  kStressNsPerCall * n, stream_.get()));
}

void MemoryStress::release(cudaStream_t call_stream) {
  const launch_observer::Unobserved ours;  // the harness's, cannot hang
  CUDA_CHECK(rank_, HarnessError,
             launch_memory_stress_release(static_cast<uint32_t*>(released_.data()), call_stream));
  ++releases_;
}

}  // namespace dcp
