// What the GPU side of this machine looks like, for reports and for the
// supervisor's up-front checks. Only the CUDA runtime and (through the loader)
// NCCL are queried; nothing here needs a GPU to *run* except where noted.
#pragma once

#include <string>
#include <vector>

#include "session.h"

namespace dcp {

// Never throws: with no driver or no GPU it returns 0 and sets *reason (one
// line, the CUDA error), so the supervisor can exit 2 pointing at --backend
// host. `reason` may be null.
int count_gpus(std::string* reason);

// Every visible GPU (index, name, UUID as "GPU-xxxxxxxx-..."). Throws
// UsageError when there is none.
std::vector<GpuInfo> list_gpus();

std::string cuda_driver_version();   // "13.0", or "" without a driver
std::string cuda_runtime_version();  // "13.0"

// Fills what the machine says about itself: env->gpus and the driver, runtime
// and NCCL versions (NCCL "" when not loadable). Rank placement (rank_gpu,
// ranks_share_gpu) is the supervisor's. Throws UsageError when there is no GPU.
void fill_gpu_environment(EnvironmentInfo* env);

}  // namespace dcp
