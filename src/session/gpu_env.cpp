// GPU environment queries (see gpu_env.h).
#include "gpu_env.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "cuda_check.h"
#include "errors.h"
#include "nccl_loader.h"

namespace dcp {
namespace {

std::string version_text(int code) {  // CUDA encodes 1000*major + 10*minor
  return fmt::format("{}.{}", code / 1000, (code % 1000) / 10);
}

std::string uuid_text(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    hex += fmt::format("{:02x}", b[i]);
    if (i == 3 || i == 5 || i == 7 || i == 9) hex += '-';
  }
  return "GPU-" + hex;
}

}  // namespace

int count_gpus(std::string* reason) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  std::string why;
  if (err != cudaSuccess) {
    cudaGetLastError();
    why = cuda_error_text(err);
    n = 0;
  } else if (n == 0) {
    why = "the driver reports no device (check CUDA_VISIBLE_DEVICES)";
  }
  if (reason != nullptr) *reason = why;
  return n;
}

std::vector<GpuInfo> list_gpus() {
  std::string reason;
  const int count = count_gpus(&reason);
  if (count == 0) {
    DCP_THROW(UsageError,
              "no CUDA GPU is visible ({}); use --backend host to run the CPU model "
              "of the protocol",
              reason);
  }
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    CUDA_CHECK("supervisor", HarnessError, cudaGetDeviceProperties(&prop, i));
    GpuInfo info;
    info.index = i;
    info.name = prop.name;
    info.uuid = uuid_text(prop.uuid);
    gpus.push_back(std::move(info));
  }
  return gpus;
}

std::string cuda_driver_version() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess || v == 0) {
    cudaGetLastError();
    return "";
  }
  return version_text(v);
}

std::string cuda_runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return version_text(v);
}

void fill_gpu_environment(EnvironmentInfo* env) {
  env->gpus = list_gpus();
  env->driver_version = cuda_driver_version();
  env->cuda_runtime_version = cuda_runtime_version();
  env->nccl_version = nccl_version_or_empty();
}

}  // namespace dcp
