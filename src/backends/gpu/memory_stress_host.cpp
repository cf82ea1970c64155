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
  CUDA_CHECK(rank, HarnessError, cudaMemset(scratch_.data(), 0, scratch_.bytes()));
  note_ = "memory stress: " + config.description;
}

void MemoryStress::kick(int calls) {
  CUDA_CHECK(rank_, HarnessError,
             launch_memory_stress(stress_, static_cast<uint32_t*>(scratch_.data()), nullptr,
                                  kStressNsPerCall * static_cast<uint64_t>(std::max(1, calls)),
                                  stream_.get()));
}

}  // namespace dcp
