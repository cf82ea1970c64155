// The kernel under test, behind the plugin ABI (kernels/dcp_kernel_plugin.h):
// a built-in entry ("direct", "stock") or a shared library (`--kernel PATH`).
// Loading validates the exported table once; everything downstream (skip
// decisions, reports, the backends) works from the validated table and its
// KernelInfo summary. Contract in prose: docs/plugins.md.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "case.h"
#include "dcp_kernel_plugin.h"

namespace dcp {

inline constexpr const char* kDefaultKernel = "direct";
// A region request above this is refused when the plugin is loaded (per rank,
// all regions together): far above any real workspace, far below garbage.
inline constexpr uint64_t kMaxWorkspaceBytes = uint64_t{64} << 30;

// What reports and skip decisions need to know about the kernel (serialisable:
// the supervisor sends it to the workers with the session config).
struct KernelInfo {
  std::string spec;  // as selected: "direct", "stock", or the library path as given
  std::string name;  // the plugin's own name
  std::string version;
  std::string path;    // absolute library path; "" for a built-in
  std::string sha256;  // of the library file; "" for a built-in
  bool builtin = true;
  int memory = DCP_MEMORY_DEVICE;
  uint32_t out_dtypes = 0;
  uint32_t lse_dtypes = 0;
  uint32_t lse_bases = 0;
  int max_group_size = 0;
  int max_slots = 0;
  int epoch_kind = DCP_EPOCH_U32;
  uint64_t capabilities = 0;
  bool has_set_epoch = false;
  std::vector<std::string> mutants;  // names the plugin offers for selftest
  std::vector<std::string> mutant_descriptions;

  bool has(uint64_t cap) const { return (capabilities & cap) != 0; }
  std::string display() const;  // "direct (built-in)" or "name 1.2 (/abs/lib.so, sha256 ab12..)"
};

// The built-in direct kernel's info: the default kernel under test.
KernelInfo default_kernel_info();

void to_json(nlohmann::json& j, const KernelInfo& k);
void from_json(const nlohmann::json& j, KernelInfo& k);

// A loaded kernel: its validated table, kept alive (the library stays open) as
// long as this object lives.
class LoadedKernel {
 public:
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  const dcpKernelPlugin_v1_t& table() const { return *table_; }
  const KernelInfo& info() const { return info_; }

 private:
  friend std::shared_ptr<LoadedKernel> load_kernel(const std::string& spec);
  LoadedKernel() = default;
  const dcpKernelPlugin_v1_t* table_ = nullptr;
  void* dl_handle_ = nullptr;
  KernelInfo info_;
};

// "direct", "stock", or a path to a shared library. Throws UsageError with one
// line for everything that makes the kernel unusable: unknown name, missing
// file, not a shared library, no known ABI symbol (too old or too new), an
// invalid table.
std::shared_ptr<LoadedKernel> load_kernel(const std::string& spec);

// Empty when the table is usable, else one line naming the first problem.
std::string validate_plugin_table(const dcpKernelPlugin_v1_t& t);
// Empty when the plugin's region requests are usable, else one line.
std::string validate_region_requests(const dcpRegionRequest_v1* regions, int32_t num_regions);

// Capability bits by their docs/CLI names ("graph-safe", "masks-empty-kv", ...).
std::string capability_name(uint64_t cap);
std::string capability_list(uint64_t caps);  // comma-separated names, "none"

// Why `c` cannot run on this kernel ("" when it can): the missing capability,
// dtype, base, group size or slot count, by name. `ranks_share_gpu` matters
// for kernels that need co-resident blocks or distinct GPUs.
std::string case_skip_reason(const KernelInfo& k, const Case& c, bool ranks_share_gpu);

// Why the whole session cannot use this kernel ("" when it can): memory kind vs
// backend, distinct GPUs when ranks share one.
std::string session_refusal(const KernelInfo& k, bool host_backend, bool ranks_share_gpu);

dcpDtype_t abi_dtype(DType d);

// "kernel direct (built-in)", with ", against stock (built-in)" when comparing.
std::string kernels_text(const KernelInfo& kernel, const KernelInfo* against);

}  // namespace dcp
