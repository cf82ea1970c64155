#include "kernel_plugin.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "builtin_kernels.h"
#include "errors.h"
#include "sha256.h"

namespace dcp {
namespace {

// The v1 table up to and including its last field: a plugin built against a
// later header may be larger, never smaller.
constexpr size_t kMinTableSize =
    offsetof(dcpKernelPlugin_v1_t, set_epoch) + sizeof(dcpKernelPlugin_v1_t::set_epoch);

constexpr uint32_t kKnownOutDtypes =
    DCP_DTYPE_MASK(DCP_DTYPE_FP16) | DCP_DTYPE_MASK(DCP_DTYPE_BF16);
constexpr uint32_t kKnownLseDtypes = kKnownOutDtypes | DCP_DTYPE_MASK(DCP_DTYPE_FP32);
constexpr uint32_t kKnownBases =
    DCP_LSE_BASE_MASK(DCP_LSE_BASE_E) | DCP_LSE_BASE_MASK(DCP_LSE_BASE_2);

struct CapName {
  uint64_t bit;
  const char* name;
};
constexpr CapName kCapNames[] = {
    {DCP_CAP_GRAPH_SAFE, "graph-safe"},
    {DCP_CAP_EAGER_BEFORE_CAPTURE, "eager-before-capture"},
    {DCP_CAP_MASKS_EMPTY_KV, "masks-empty-kv"},
    {DCP_CAP_NEEDS_DISTINCT_GPUS, "needs-distinct-gpus"},
    {DCP_CAP_NEEDS_CORESIDENT, "needs-coresident"},
    {DCP_CAP_TIMEOUT_HINT, "timeout-hint"},
    {DCP_CAP_COMBINED_LSE, "combined-lse"},
    {DCP_CAP_WAIT_STATUS, "wait-status"},
    {DCP_CAP_PDL, "pdl"},
    {DCP_CAP_LAUNCH_RECORD, "launch-record"},
};

bool printable(const char* s, size_t max_len) {
  if (s == nullptr) return false;
  const size_t n = strnlen(s, max_len + 1);
  if (n == 0 || n > max_len) return false;
  for (size_t i = 0; i < n; ++i) {
    if (static_cast<unsigned char>(s[i]) < 0x20 || static_cast<unsigned char>(s[i]) > 0x7e) {
      return false;
    }
  }
  return true;
}

bool looks_like_elf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == 4 && std::memcmp(magic,
                                         "\x7f"
                                         "ELF",
                                         4) == 0;
}

// No known symbol: name the ABI the library does export, if any, so the user
// knows whether the plugin or dcp-check is out of date.
std::string missing_symbol_reason(void* handle) {
  for (int v = 9; v >= 2; --v) {
    if (dlsym(handle, fmt::format("dcpKernelPlugin_v{}", v).c_str()) != nullptr) {
      return fmt::format(
          "exports dcpKernelPlugin_v{}, a newer plugin ABI than this dcp-check knows (v{}): "
          "upgrade dcp-check or build the plugin against ABI v{}",
          v, DCP_PLUGIN_ABI_VERSION, DCP_PLUGIN_ABI_VERSION);
    }
  }
  if (dlsym(handle, "dcpKernelPlugin_v0") != nullptr) {
    return fmt::format(
        "exports dcpKernelPlugin_v0, an ABI older than the oldest this dcp-check "
        "accepts (v{}): rebuild it against kernels/dcp_kernel_plugin.h",
        DCP_PLUGIN_ABI_VERSION);
  }
  return fmt::format("exports no {} symbol: not a dcp-check kernel plugin (see docs/plugins.md)",
                     DCP_PLUGIN_SYMBOL_V1);
}

KernelInfo info_of(const dcpKernelPlugin_v1_t& t) {
  KernelInfo k;
  k.name = t.name;
  k.version = t.version;
  k.memory = t.memory;
  k.out_dtypes = t.out_dtypes;
  k.lse_dtypes = t.lse_dtypes;
  k.lse_bases = t.lse_bases;
  k.max_group_size = t.max_group_size;
  k.max_slots = t.max_slots;
  k.epoch_kind = t.epoch_kind;
  k.capabilities = t.capabilities;
  k.has_set_epoch = t.set_epoch != nullptr;
  for (int i = 0; i < t.num_mutants; ++i) {
    k.mutants.emplace_back(t.mutants[i].name);
    k.mutant_descriptions.emplace_back(t.mutants[i].description ? t.mutants[i].description : "");
  }
  return k;
}

std::string dtype_list(uint32_t mask) {
  std::string out;
  const std::pair<dcpDtype_t, const char*> names[] = {
      {DCP_DTYPE_FP16, "fp16"}, {DCP_DTYPE_BF16, "bf16"}, {DCP_DTYPE_FP32, "fp32"}};
  for (const auto& [d, n] : names) {
    if (mask & DCP_DTYPE_MASK(d)) out += (out.empty() ? "" : ",") + std::string(n);
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string KernelInfo::display() const {
  if (builtin) return fmt::format("{} (built-in)", spec);
  return fmt::format("{} {} ({}, sha256 {})", name, version, path, sha256.substr(0, 16));
}

void to_json(nlohmann::json& j, const KernelInfo& k) {
  j = {{"spec", k.spec},
       {"name", k.name},
       {"version", k.version},
       {"path", k.path},
       {"sha256", k.sha256},
       {"builtin", k.builtin},
       {"memory", k.memory == DCP_MEMORY_HOST ? "host" : "device"},
       {"out_dtypes", k.out_dtypes},
       {"lse_dtypes", k.lse_dtypes},
       {"lse_bases", k.lse_bases},
       {"max_group_size", k.max_group_size},
       {"max_slots", k.max_slots},
       {"epoch_kind", k.epoch_kind},
       {"capabilities", k.capabilities},
       {"capability_names", capability_list(k.capabilities)},
       {"has_set_epoch", k.has_set_epoch},
       {"mutants", k.mutants},
       {"mutant_descriptions", k.mutant_descriptions}};
}

void from_json(const nlohmann::json& j, KernelInfo& k) {
  j.at("spec").get_to(k.spec);
  j.at("name").get_to(k.name);
  j.at("version").get_to(k.version);
  j.at("path").get_to(k.path);
  j.at("sha256").get_to(k.sha256);
  j.at("builtin").get_to(k.builtin);
  k.memory = j.at("memory").get<std::string>() == "host" ? DCP_MEMORY_HOST : DCP_MEMORY_DEVICE;
  j.at("out_dtypes").get_to(k.out_dtypes);
  j.at("lse_dtypes").get_to(k.lse_dtypes);
  j.at("lse_bases").get_to(k.lse_bases);
  j.at("max_group_size").get_to(k.max_group_size);
  j.at("max_slots").get_to(k.max_slots);
  j.at("epoch_kind").get_to(k.epoch_kind);
  j.at("capabilities").get_to(k.capabilities);
  j.at("has_set_epoch").get_to(k.has_set_epoch);
  j.at("mutants").get_to(k.mutants);
  j.at("mutant_descriptions").get_to(k.mutant_descriptions);
}

KernelInfo default_kernel_info() { return load_kernel(kDefaultKernel)->info(); }

LoadedKernel::~LoadedKernel() {
  if (dl_handle_ != nullptr) dlclose(dl_handle_);
}

std::string validate_plugin_table(const dcpKernelPlugin_v1_t& t) {
  if (t.struct_size < kMinTableSize) {
    return fmt::format("its table is {} bytes, smaller than the {} bytes of ABI v1", t.struct_size,
                       kMinTableSize);
  }
  if (t.abi_version != DCP_PLUGIN_ABI_VERSION) {
    return fmt::format("declares ABI version {} in a {} table (expected {})", t.abi_version,
                       DCP_PLUGIN_SYMBOL_V1, DCP_PLUGIN_ABI_VERSION);
  }
  if (!printable(t.name, 64)) return "name is missing, empty, over 64 characters or not printable";
  if (!printable(t.version, 64)) return "version is missing, empty or not printable";
  if (t.memory != DCP_MEMORY_DEVICE && t.memory != DCP_MEMORY_HOST) {
    return fmt::format("memory {} is neither DCP_MEMORY_DEVICE nor DCP_MEMORY_HOST", t.memory);
  }
  if (t.out_dtypes == 0 || (t.out_dtypes & ~kKnownOutDtypes) != 0) {
    return fmt::format("out_dtypes 0x{:x} must be a non-empty set of fp16/bf16", t.out_dtypes);
  }
  if (t.lse_dtypes == 0 || (t.lse_dtypes & ~kKnownLseDtypes) != 0) {
    return fmt::format("lse_dtypes 0x{:x} must be a non-empty set of fp32/fp16/bf16", t.lse_dtypes);
  }
  if (t.lse_bases == 0 || (t.lse_bases & ~kKnownBases) != 0) {
    return fmt::format("lse_bases 0x{:x} must be a non-empty set of e/2", t.lse_bases);
  }
  if (t.max_group_size < 2 || t.max_group_size > 1024) {
    return fmt::format("max_group_size {} is outside [2, 1024]", t.max_group_size);
  }
  if (t.max_slots < 1 || t.max_slots > 64) {
    return fmt::format("max_slots {} is outside [1, 64]", t.max_slots);
  }
  if (t.epoch_kind < DCP_EPOCH_U32 || t.epoch_kind > DCP_EPOCH_U64) {
    return fmt::format("epoch_kind {} is not a dcpEpochKind_t", t.epoch_kind);
  }
  if (t.get_workspace == nullptr || t.init == nullptr || t.call == nullptr ||
      t.finalize == nullptr || t.last_error == nullptr) {
    return "a required function (get_workspace, init, call, finalize, last_error) is NULL";
  }
  if (t.num_mutants < 0 || t.num_mutants > 256 || (t.num_mutants > 0 && t.mutants == nullptr)) {
    return fmt::format("num_mutants {} with mutants {}", t.num_mutants,
                       t.mutants == nullptr ? "NULL" : "set");
  }
  std::set<std::string> seen;
  for (int i = 0; i < t.num_mutants; ++i) {
    if (!printable(t.mutants[i].name, 64) || !seen.insert(t.mutants[i].name).second) {
      return fmt::format("mutant {} has a missing, duplicate or unprintable name", i);
    }
  }
  return "";
}

std::string validate_region_requests(const dcpRegionRequest_v1* regions, int32_t num_regions) {
  if (num_regions < 0 || num_regions > DCP_MAX_REGIONS) {
    return fmt::format("get_workspace returned {} regions (0..{} allowed)", num_regions,
                       DCP_MAX_REGIONS);
  }
  std::set<std::string> names;
  uint64_t total = 0;
  for (int i = 0; i < num_regions; ++i) {
    const dcpRegionRequest_v1& r = regions[i];
    if (strnlen(r.name, DCP_REGION_NAME_BYTES) == DCP_REGION_NAME_BYTES ||
        !printable(r.name, DCP_REGION_NAME_BYTES - 1)) {
      return fmt::format("region {} has a missing, unterminated or unprintable name", i);
    }
    if (!names.insert(r.name).second) return fmt::format("region name '{}' is repeated", r.name);
    if (r.bytes == 0 || r.bytes > kMaxWorkspaceBytes) {
      return fmt::format("region '{}' asks for {} bytes (1 .. {} GiB allowed per rank)", r.name,
                         r.bytes, kMaxWorkspaceBytes >> 30);
    }
    total += r.bytes;
    if (total > kMaxWorkspaceBytes) {
      return fmt::format("regions ask for more than {} GiB per rank in all",
                         kMaxWorkspaceBytes >> 30);
    }
    if (r.alignment > 4096 || (r.alignment & (r.alignment - 1)) != 0) {
      return fmt::format("region '{}' alignment {} is not a power of two <= 4096", r.name,
                         r.alignment);
    }
    if (r.kind < DCP_REGION_PAYLOAD || r.kind > DCP_REGION_LOCAL) {
      return fmt::format("region '{}' kind {} is not a dcpRegionKind_t", r.name, r.kind);
    }
    if (r.init < DCP_REGION_INIT_ZERO || r.init > DCP_REGION_INIT_PLUGIN) {
      return fmt::format("region '{}' init {} is not a dcpRegionInit_t", r.name, r.init);
    }
    if (r.init == DCP_REGION_INIT_FILL && r.fill_byte > 255) {
      return fmt::format("region '{}' fill_byte {} is not a byte", r.name, r.fill_byte);
    }
  }
  return "";
}

std::shared_ptr<LoadedKernel> load_kernel(const std::string& spec) {
  std::shared_ptr<LoadedKernel> k(new LoadedKernel());
  const dcpKernelPlugin_v1_t* builtin = find_builtin_kernel(spec);
  if (builtin != nullptr) {
    k->table_ = builtin;
    k->info_ = info_of(*builtin);
    k->info_.spec = spec;
    return k;
  }
  auto refuse = [&](const std::string& why) -> std::shared_ptr<LoadedKernel> {
    throw UsageError(fmt::format("--kernel {}: {}", spec, why));
  };
  if (spec.empty()) refuse("empty (use direct, stock, or the path of a plugin library)");
  if (spec.find('/') == std::string::npos && spec.find(".so") == std::string::npos) {
    refuse(
        fmt::format("no built-in kernel of that name ({}); a plugin is given by its path, "
                    "e.g. ./libmy_kernel.so",
                    builtin_kernel_names()));
  }
  struct stat st {};
  if (stat(spec.c_str(), &st) != 0) refuse("no such file");
  if (!S_ISREG(st.st_mode)) refuse("not a regular file");
  if (!looks_like_elf(spec)) refuse("not a shared library (no ELF header)");
  std::error_code ec;
  const std::string abs = std::filesystem::absolute(spec, ec).lexically_normal().string();
  dlerror();
  void* handle = dlopen(abs.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    refuse(fmt::format("cannot be loaded: {}", err != nullptr ? err : "unknown dlopen error"));
  }
  k->dl_handle_ = handle;
  const auto* table = static_cast<const dcpKernelPlugin_v1_t*>(dlsym(handle, DCP_PLUGIN_SYMBOL_V1));
  if (table == nullptr) refuse(missing_symbol_reason(handle));
  if (const std::string why = validate_plugin_table(*table); !why.empty()) refuse(why);
  k->table_ = table;
  k->info_ = info_of(*table);
  k->info_.spec = spec;
  k->info_.builtin = false;
  k->info_.path = abs;
  k->info_.sha256 = sha256_file_hex(abs);
  return k;
}

std::string capability_name(uint64_t cap) {
  for (const CapName& c : kCapNames) {
    if (c.bit == cap) return c.name;
  }
  return fmt::format("bit{}", __builtin_ctzll(cap));
}

std::string capability_list(uint64_t caps) {
  std::string out;
  for (int b = 0; b < 64; ++b) {
    if (caps & (uint64_t{1} << b))
      out += (out.empty() ? "" : ",") + capability_name(uint64_t{1} << b);
  }
  return out.empty() ? "none" : out;
}

dcpDtype_t abi_dtype(DType d) {
  switch (d) {
    case DType::kFp16:
      return DCP_DTYPE_FP16;
    case DType::kBf16:
      return DCP_DTYPE_BF16;
    case DType::kFp32:
      return DCP_DTYPE_FP32;
  }
  return DCP_DTYPE_FP32;
}

std::string kernels_text(const KernelInfo& kernel, const KernelInfo* against) {
  std::string s = "kernel " + kernel.display();
  if (against != nullptr) s += ", against " + against->display();
  return s;
}

std::string case_skip_reason(const KernelInfo& k, const Case& c, bool ranks_share_gpu) {
  const std::string who = fmt::format("kernel '{}'", k.name);
  if (!(k.out_dtypes & DCP_DTYPE_MASK(abi_dtype(c.out_dtype)))) {
    return fmt::format("{} does not support output dtype {} (it declares {})", who,
                       to_string(c.out_dtype), dtype_list(k.out_dtypes));
  }
  if (!(k.lse_dtypes & DCP_DTYPE_MASK(abi_dtype(c.lse_dtype)))) {
    return fmt::format("{} does not support LSE dtype {} (it declares {})", who,
                       to_string(c.lse_dtype), dtype_list(k.lse_dtypes));
  }
  const int base = c.lse_base == LseBase::kE ? DCP_LSE_BASE_E : DCP_LSE_BASE_2;
  if (!(k.lse_bases & DCP_LSE_BASE_MASK(base))) {
    return fmt::format("{} does not support LSE base {}", who, to_string(c.lse_base));
  }
  if (c.dcp_size > k.max_group_size) {
    return fmt::format("{} supports DCP groups of up to {} ranks, not {}", who, k.max_group_size,
                       c.dcp_size);
  }
  if (c.num_slots > k.max_slots) {
    return fmt::format("{} supports {} ubatch slot(s), the case uses {}", who, k.max_slots,
                       c.num_slots);
  }
  if (uses_graphs(c.mode) && k.memory == DCP_MEMORY_DEVICE && !k.has(DCP_CAP_GRAPH_SAFE)) {
    return fmt::format("{} lacks capability graph-safe (the case replays CUDA graphs)", who);
  }
  if (c.producer == Producer::kSlowPdl && k.memory == DCP_MEMORY_DEVICE && !k.has(DCP_CAP_PDL)) {
    return fmt::format(
        "{} lacks capability pdl (the case's input producer triggers programmatic completion "
        "early and asks for a PDL launch)",
        who);
  }
  if (c.pressure > 0 && k.has(DCP_CAP_NEEDS_CORESIDENT)) {
    return fmt::format(
        "{} declares needs-coresident: the case occupies most of its SMs on purpose", who);
  }
  if (c.empty != EmptyPattern::kNone && !k.has(DCP_CAP_MASKS_EMPTY_KV)) {
    return fmt::format("{} lacks capability masks-empty-kv (the case has empty KV shards)", who);
  }
  if (c.epoch_start.has_value() && !k.has_set_epoch) {
    return fmt::format("{} has no set_epoch hook (the case starts near the epoch wrap)", who);
  }
  // A graph set runs one call per batch: its two slots are never in flight at once.
  const bool overlapping_slots =
      c.num_slots > 1 && c.mode != ExecMode::kEager && c.mode != ExecMode::kGraphSet;
  if (overlapping_slots && ranks_share_gpu && k.has(DCP_CAP_NEEDS_CORESIDENT)) {
    return fmt::format(
        "{} declares needs-coresident and ranks share a GPU: two slots in flight "
        "may starve each other's kernels",
        who);
  }
  return "";
}

std::string session_refusal(const KernelInfo& k, bool host_backend, bool ranks_share_gpu) {
  if (host_backend) {
    if (k.builtin && k.spec == "direct") return "";  // the host model of the direct path
    if (k.memory != DCP_MEMORY_HOST) {
      return fmt::format(
          "kernel '{1}' ({0}) runs on the GPU (device memory); --backend host runs "
          "only plugins that declare DCP_MEMORY_HOST",
          k.spec, k.name);
    }
    return "";
  }
  if (k.memory == DCP_MEMORY_HOST) {
    return fmt::format("kernel '{1}' ({0}) declares host memory: run it with --backend host",
                       k.spec, k.name);
  }
  if (ranks_share_gpu && k.has(DCP_CAP_NEEDS_DISTINCT_GPUS)) {
    return fmt::format(
        "kernel '{1}' ({0}) needs one GPU per rank (capability needs-distinct-gpus), "
        "but ranks share a GPU here; run with --world <= the number of GPUs",
        k.spec, k.name);
  }
  return "";
}

}  // namespace dcp
