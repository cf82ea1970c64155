#include "version_info.h"

#include <doctest/doctest.h>

#include <sstream>
#include <vector>

namespace dcp {

TEST_CASE("version_text: one fact per line, absent ones said so") {
  VersionInfo v;
  v.version = "1.2.3";
  v.git_revision = "abcdef012345";
  v.plugin_abi = 1;
  v.cuda_runtime = "13.0";
  std::vector<std::string> lines;
  std::istringstream in(version_text(v));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 6);
  CHECK(lines[0] == "dcp-check 1.2.3");
  CHECK(lines[1] == "git revision abcdef012345");
  CHECK(lines[2] == "plugin ABI 1 (dcpKernelPlugin_v1)");
  CHECK(lines[3] == "CUDA runtime 13.0 (static)");
  CHECK(lines[4] == "CUDA driver: none");
  CHECK(lines[5].rfind("NCCL: not found", 0) == 0);
  v.cuda_driver = "13.1";
  v.nccl_version = "2.28.9";
  v.nccl_path = "libnccl.so.2";
  const auto j = version_json(v);
  CHECK(j["plugin_abi_version"] == 1);
  CHECK(j["nccl_found"] == true);
  CHECK(j["cuda_driver_version"] == "13.1");
  CHECK(version_text(v).find("NCCL 2.28.9 (libnccl.so.2)") != std::string::npos);
}

TEST_CASE("version_info: this binary's own facts") {
  const VersionInfo& v = version_info();
  CHECK_FALSE(v.version.empty());
  CHECK(v.plugin_abi >= 1);
  CHECK_FALSE(v.cuda_runtime.empty());  // linked statically: always known
}

}  // namespace dcp
