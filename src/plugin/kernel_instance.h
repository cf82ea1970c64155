// One context of the kernel under test on one rank, driven through the plugin
// ABI: query the workspace, init (agreed across the group), calls, finalize.
// The backend in between allocates and maps the regions (CUDA IPC or shared
// memory). Every plugin function runs with this rank's "inside the kernel"
// mark set on the status board, so a crash inside it is reported as the kernel's.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "dcp_kernel_plugin.h"
#include "kernel_plugin.h"
#include "rendezvous.h"
#include "wait_status.h"

namespace dcp {

struct KernelGroup {
  int global_rank = 0;
  int group_rank = 0;
  std::vector<int> members;  // global ranks, ascending
  int device = -1;           // CUDA ordinal; -1 for host plugins
  int max_tokens = 0;
  int heads_per_rank = 0;
  int head_dim = 0;
  int num_slots = 0;
  uint64_t timeout_ns = 0;
  WaitStatus* wait_status = nullptr;       // as the plugin writes it (device pointer on the GPU)
  std::string mutant;                      // "" or a mutant name the plugin declares
  std::string key;                         // unique per workspace: names the rendezvous exchanges
  volatile uint32_t* in_kernel = nullptr;  // status-board mark, or null
};

// The group a backend serves, as its kernel instance sees it: sizes from the
// workspace geometry, the mutant (1-based in config.mutant) resolved to the
// kernel's name for it. `device` is -1 for host plugins; `wait_status` is the
// record as the kernel writes it (a device pointer on the GPU).
KernelGroup kernel_group(const BackendConfig& config, int device, WaitStatus* wait_status);

// A fault dcp-check injects into this rank's init (Case::init_fault): kFail
// reports the init failed (injected_init_failure()) without calling the
// kernel's; kLate calls it late_ms late.
struct InitInjection {
  InitFault fault = InitFault::kNone;
  int late_ms = 0;
};
std::string injected_init_failure();

// The init of an init-fault case (Case::init_fault), on every rank of the
// group, between its barriers: drop() finalizes and unmaps context 0, make()
// maps it afresh and inits it with the injection (this rank's, from
// init_fault_rank). kLate: one make, late on that rank. kFail: the first make
// must throw the agreed failure naming that rank and the injected message on
// every rank (anything else is rethrown: the kernel's own failure, or a
// hang that the supervisor's deadline reports); then drop() and a plain make().
void init_with_fault(const Case& c, int group_rank, const std::function<void()>& drop,
                     const std::function<void(const InitInjection&)>& make);

class KernelInstance {
 public:
  KernelInstance(std::shared_ptr<const LoadedKernel> kernel, const KernelGroup& group);
  ~KernelInstance();  // finalize (if init succeeded)
  KernelInstance(const KernelInstance&) = delete;
  KernelInstance& operator=(const KernelInstance&) = delete;

  // get_workspace, validated, and identical on every group rank (checked over
  // the rendezvous). Throws UsageError with one line otherwise.
  std::vector<dcpRegionRequest_v1> query_workspace(Rendezvous& rendezvous);
  // init with the mapped regions, then the group agreement (plugin_services.h).
  void init(const std::vector<dcpRegion_v1>& regions, Rendezvous& rendezvous,
            const InitInjection& inject = {});
  // Throws KernelFault naming the status and the plugin's last_error.
  void call(const dcpCallArgs_v1& args, const char* what = "call");
  void set_epoch(int slot, uint64_t epoch, void* stream);

  const dcpKernelPlugin_v1_t& table() const { return kernel_->table(); }
  const KernelInfo& info() const { return kernel_->info(); }
  const dcpGroupConfig_v1& config() const { return config_; }

 private:
  std::string last_error() const;
  std::shared_ptr<const LoadedKernel> kernel_;
  KernelGroup group_;
  std::vector<int32_t> members32_;
  dcpGroupConfig_v1 config_{};
  void* context_ = nullptr;
  bool initialised_ = false;
};

std::string_view status_name(dcpStatus_t s);

}  // namespace dcp
