#include "version_info.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "dcp_kernel_plugin.h"
#include "nccl_loader.h"
#include "version.h"

namespace dcp {
namespace {

std::string cuda_version_text(int code) {  // CUDA encodes 1000*major + 10*minor
  return fmt::format("{}.{}", code / 1000, (code % 1000) / 10);
}

VersionInfo query() {
  VersionInfo v;
  v.version = DCP_VERSION;
  v.git_revision = DCP_GIT_REVISION;
  v.plugin_abi = DCP_PLUGIN_ABI_VERSION;
  int code = 0;
  if (cudaRuntimeGetVersion(&code) == cudaSuccess && code > 0) v.cuda_runtime = cuda_version_text(code);
  code = 0;
  if (cudaDriverGetVersion(&code) == cudaSuccess && code > 0) v.cuda_driver = cuda_version_text(code);
  cudaGetLastError();
  try {
    const auto nccl = NcclLibrary::load();
    v.nccl_version = nccl->version();
    v.nccl_path = nccl->path();
  } catch (const std::exception&) {
    // Not found: the stock kernel is then unavailable (exit 2 when asked for).
  }
  return v;
}

}  // namespace

const VersionInfo& version_info() {
  static const VersionInfo info = query();
  return info;
}

std::string version_text(const VersionInfo& v) {
  std::string out = fmt::format("dcp-check {}\n", v.version);
  out += fmt::format("git revision {}\n", v.git_revision);
  out += fmt::format("plugin ABI {} (dcpKernelPlugin_v{})\n", v.plugin_abi, v.plugin_abi);
  out += v.cuda_runtime.empty() ? "CUDA runtime: unknown\n"
                                : fmt::format("CUDA runtime {} (static)\n", v.cuda_runtime);
  out += v.cuda_driver.empty() ? "CUDA driver: none\n"
                               : fmt::format("CUDA driver {}\n", v.cuda_driver);
  out += v.nccl_version.empty()
             ? "NCCL: not found (only --kernel stock needs it; set NCCL_ROOT or LD_LIBRARY_PATH)"
             : fmt::format("NCCL {} ({})", v.nccl_version, v.nccl_path);
  return out;
}

nlohmann::ordered_json version_json(const VersionInfo& v) {
  return {{"name", "dcp-check"},
          {"version", v.version},
          {"git_revision", v.git_revision},
          {"plugin_abi_version", v.plugin_abi},
          {"cuda_runtime_version", v.cuda_runtime},
          {"cuda_driver_version", v.cuda_driver},
          {"nccl_found", !v.nccl_version.empty()},
          {"nccl_version", v.nccl_version}};
}

}  // namespace dcp
