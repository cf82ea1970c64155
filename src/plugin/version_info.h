// What `dcp-check --version` prints and every JSON report's "tool" holds: the
// version and git revision, the plugin ABI version it loads, the CUDA runtime
// it is linked with, the driver and NCCL it finds here (each may be absent).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dcp {

struct VersionInfo {
  std::string version;       // "0.1.0"
  std::string git_revision;  // 12 hex digits, or "unknown"
  int plugin_abi = 0;        // DCP_PLUGIN_ABI_VERSION
  std::string cuda_runtime;  // "13.0" (linked statically)
  std::string cuda_driver;   // "13.0", "" without a driver
  std::string nccl_version;  // "2.28.9", "" when NCCL cannot be loaded
  std::string nccl_path;     // the library that was loaded
};

// Queried once per process (dlopen()s NCCL, asks the CUDA driver); never throws.
const VersionInfo& version_info();
// One fact per line: "dcp-check 0.1.0", "git revision ...", "plugin ABI 1 ...",
// "CUDA runtime ...", "CUDA driver ..." or "CUDA driver: none", "NCCL ..." or
// "NCCL: not found ...".
std::string version_text(const VersionInfo& v);
nlohmann::ordered_json version_json(const VersionInfo& v);

}  // namespace dcp
