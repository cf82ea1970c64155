#include "kernel_instance.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "errors.h"
#include "plan.h"
#include "plugin_services.h"

namespace dcp {
namespace {

std::string request_summary(const std::vector<dcpRegionRequest_v1>& rs) {
  std::string s;
  for (const auto& r : rs) {
    s += fmt::format("{}:{}:{}:{}:{}:{};", r.name, r.bytes, r.alignment, r.kind, r.init,
                     r.fill_byte);
  }
  return s;
}

}  // namespace

KernelGroup kernel_group(const BackendConfig& config, int device, WaitStatus* wait_status) {
  const KernelInfo& k = config.kernel->info();
  KernelGroup group;
  group.global_rank = config.global_rank;
  group.group_rank = config.group_rank;
  group.members = config.members;
  group.device = device;
  group.max_tokens = config.geometry.max_tokens;
  group.heads_per_rank = config.geometry.heads_per_rank;
  group.head_dim = config.geometry.head_dim;
  group.num_slots = std::min(kMaxSlots, k.max_slots);
  group.timeout_ns = static_cast<uint64_t>(std::max(1e-3, config.spin_timeout_s) * 1e9);
  group.wait_status = wait_status;
  group.in_kernel = config.in_kernel;
  group.key = fmt::format("{}/dcp{}g{}/h{}d{}m{}/{}", config.run_id, config.dcp_size,
                          config.group_idx, config.geometry.heads_per_rank,
                          config.geometry.head_dim, config.geometry.max_tokens, k.name);
  if (config.mutant > 0) {
    DCP_CHECK(config.mutant <= static_cast<int>(k.mutants.size()), UsageError,
              "kernel '{}' has no mutant {}", k.name, config.mutant);
    group.mutant = k.mutants[config.mutant - 1];
  }
  return group;
}

std::string_view status_name(dcpStatus_t s) {
  switch (s) {
    case DCP_STATUS_OK:
      return "OK";
    case DCP_STATUS_UNSUPPORTED:
      return "UNSUPPORTED";
    case DCP_STATUS_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case DCP_STATUS_CUDA_ERROR:
      return "CUDA_ERROR";
    case DCP_STATUS_INTERNAL:
      return "INTERNAL";
  }
  return "an unknown status";
}

KernelInstance::KernelInstance(std::shared_ptr<const LoadedKernel> kernel, const KernelGroup& group)
    : kernel_(std::move(kernel)), group_(group) {
  members32_.assign(group_.members.begin(), group_.members.end());
  config_.struct_size = sizeof config_;
  config_.group_rank = group_.group_rank;
  config_.group_size = static_cast<int32_t>(group_.members.size());
  config_.global_rank = group_.global_rank;
  config_.device = group_.device;
  config_.members = members32_.data();
  config_.max_tokens = group_.max_tokens;
  config_.heads_per_rank = group_.heads_per_rank;
  config_.head_dim = group_.head_dim;
  config_.num_slots = group_.num_slots;
  config_.timeout_ns = group_.timeout_ns;
  config_.wait_status = group_.wait_status;
  config_.mutant = group_.mutant.empty() ? nullptr : group_.mutant.c_str();
}

KernelInstance::~KernelInstance() {
  if (!initialised_) return;
  InKernelScope mark(group_.in_kernel, kInKernelFinalize);
  table().finalize(context_);
}

std::string KernelInstance::last_error() const {
  const char* e = nullptr;
  {
    InKernelScope mark(group_.in_kernel);
    e = table().last_error(context_);
  }
  if (e == nullptr || *e == '\0') return "no message";
  return std::string(e, strnlen(e, 2000));
}

std::vector<dcpRegionRequest_v1> KernelInstance::query_workspace(Rendezvous& rendezvous) {
  std::vector<dcpRegionRequest_v1> requests(DCP_MAX_REGIONS);
  for (auto& r : requests) {
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
  }
  int32_t n = -1;
  dcpStatus_t st;
  {
    InKernelScope mark(group_.in_kernel);
    st = table().get_workspace(&config_, requests.data(), DCP_MAX_REGIONS, &n);
  }
  const std::string who = fmt::format("--kernel {}", info().spec);
  if (st != DCP_STATUS_OK) {
    throw UsageError(
        fmt::format("{}: get_workspace for DCP{} H={} D={} max_tokens={} returned {}: {}", who,
                    config_.group_size, config_.heads_per_rank, config_.head_dim,
                    config_.max_tokens, status_name(st), last_error()));
  }
  if (const std::string why = validate_region_requests(requests.data(), n); !why.empty()) {
    throw UsageError(fmt::format("{}: {}", who, why));
  }
  requests.resize(n);
  const std::vector<std::string> all =
      rendezvous.allgather(group_.key + "/regions", group_.members, request_summary(requests));
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] != all[0]) {
      throw UsageError(
          fmt::format("{}: ranks disagree on the workspace (rank {} asks for '{}', "
                      "rank {} for '{}')",
                      who, group_.members[0], all[0], group_.members[i], all[i]));
    }
  }
  return requests;
}

void KernelInstance::init(const std::vector<dcpRegion_v1>& regions, Rendezvous& rendezvous,
                          const InitInjection& inject) {
  GroupInit group_init(rendezvous, group_.key, group_.members, group_.group_rank,
                       [this](int level, const std::string& msg) {
                         // Warnings and errors reach the terminal; the rest only with debug
                         // logging.
                         const auto lvl = level >= 3   ? spdlog::level::err
                                          : level == 2 ? spdlog::level::warn
                                                       : spdlog::level::debug;
                         spdlog::log(lvl, "rank {} [{}]: {}", group_.global_rank, info().name, msg);
                       });
  if (inject.fault == InitFault::kLate) {
    std::this_thread::sleep_for(std::chrono::milliseconds(inject.late_ms));
  }
  dcpStatus_t st = DCP_STATUS_INTERNAL;
  void* ctx = nullptr;
  std::string message;
  if (inject.fault == InitFault::kFail) {
    message = injected_init_failure();  // the kernel's init is never called on this rank
  } else {
    InKernelScope mark(group_.in_kernel, kInKernelInit);
    st = table().init(&config_, regions.data(), static_cast<int32_t>(regions.size()),
                      group_init.services(), &ctx);
  }
  if (message.empty() && st != DCP_STATUS_OK) {
    message = fmt::format("{}: {}", status_name(st), last_error());
  } else if (st == DCP_STATUS_OK && ctx == nullptr) {
    st = DCP_STATUS_INTERNAL;
    message = "init returned OK but no context";
  }
  if (st == DCP_STATUS_OK) {
    context_ = ctx;
    initialised_ = true;  // finalize runs even if a peer failed
  }
  group_init.agree(st, message, inject.fault == InitFault::kFail);
}

void init_with_fault(const Case& c, int group_rank, const std::function<void()>& drop,
                     const std::function<void(const InitInjection&)>& make) {
  const int culprit = init_fault_rank(c);
  InitInjection inject;
  if (group_rank == culprit) inject = {c.init_fault, c.init_late_ms};
  drop();
  if (c.init_fault == InitFault::kFail) {
    bool stopped = false;
    try {
      make(inject);
    } catch (const KernelFault& e) {
      const std::string what = e.what();
      if (what.find(injected_init_failure()) == std::string::npos ||
          what.find(fmt::format("(group rank {})", culprit)) == std::string::npos) {
        throw;
      }
      stopped = true;
    }
    DCP_CHECK(stopped, HarnessError, "the init failure injected on group rank {} was not reported",
              culprit);
    drop();
    inject = {};
  }
  make(inject);
}

std::string injected_init_failure() {
  return "init failure injected by dcp-check (an init-fault case): this rank did not call the "
         "kernel's init";
}

void KernelInstance::call(const dcpCallArgs_v1& args, const char* what) {
  dcpStatus_t st;
  {
    InKernelScope mark(group_.in_kernel);
    st = table().call(context_, &args);
  }
  if (st == DCP_STATUS_OK) return;
  const std::string message = fmt::format(
      "kernel '{}' {} (slot {}, T={}) returned {}: {}", info().name, what, args.slot,
      args.num_tokens, status_name(st), last_error());
  if (st == DCP_STATUS_INVALID_ARGUMENT) throw KernelRefusal(message);
  throw KernelFault(message);
}

void KernelInstance::set_epoch(int slot, uint64_t epoch, void* stream) {
  DCP_CHECK(table().set_epoch != nullptr, HarnessError, "kernel '{}' has no set_epoch hook",
            info().name);
  dcpStatus_t st;
  {
    InKernelScope mark(group_.in_kernel);
    st = table().set_epoch(context_, slot, epoch, stream);
  }
  if (st != DCP_STATUS_OK) {
    throw KernelFault(fmt::format("kernel '{}' set_epoch(slot {}, {}) returned {}: {}", info().name,
                                  slot, epoch, status_name(st), last_error()));
  }
}

}  // namespace dcp
