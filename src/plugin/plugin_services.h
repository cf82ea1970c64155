// The host services a plugin's init gets (allgather, barrier, log), and the
// agreement on init's outcome across the group. Invariant: no rank waits alone.
// Every exchange during init is one numbered round over the rendezvous, and a
// rank that has finished init (well or badly) keeps joining rounds until every
// rank has, so a peer blocked in a service allgather learns of the failure in
// the same round instead of waiting for a deadline.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dcp_kernel_plugin.h"
#include "rendezvous.h"

namespace dcp {

class GroupInit {
 public:
  using LogFn = std::function<void(int level, const std::string& message)>;
  GroupInit(Rendezvous& rendezvous, std::string key, std::vector<int> members, int group_rank,
            LogFn log);
  GroupInit(const GroupInit&) = delete;
  GroupInit& operator=(const GroupInit&) = delete;

  // Valid while this object lives; hand it to the plugin's init.
  const dcpHostServices_v1* services() const { return &services_; }

  // Call once the plugin's init returned `status` (with its last_error text).
  // Returns when every rank's init succeeded. Otherwise throws, on every rank,
  // with the failure of the lowest group rank whose failure was injected by
  // dcp-check (`injected`: an init-fault case), else of the lowest whose was
  // its own (not one that followed from a peer's), else of the lowest:
  // UsageError when it said UNSUPPORTED or INVALID_ARGUMENT, KernelFault
  // otherwise. (A peer that timed out waiting for an injected failure is not
  // the cause.)
  void agree(dcpStatus_t status, const std::string& message, bool injected = false);

 private:
  static dcpStatus_t allgather_cb(void* handle, const void* send, size_t bytes, void* recv);
  static dcpStatus_t barrier_cb(void* handle);
  static void log_cb(void* handle, int32_t level, const char* message);
  std::vector<std::string> round(const std::string& mine);

  Rendezvous& rendezvous_;
  std::string key_;
  std::vector<int> members_;
  int group_rank_;
  LogFn log_;
  int round_ = 0;
  std::string broken_;  // why services now fail at once (a peer left init, sizes disagreed)
  bool broken_by_peer_ = false;  // a peer finished init first: this rank's failure follows from it
  dcpHostServices_v1 services_{};
};

// A Rendezvous over the ABI's services, for built-in kernels whose setup code
// speaks Rendezvous (variable-length contributions; keys and members are
// implied by the group).
class ServicesRendezvous final : public Rendezvous {
 public:
  explicit ServicesRendezvous(const dcpHostServices_v1& services, int group_size)
      : services_(services), group_size_(group_size) {}
  std::vector<std::string> allgather(const std::string& key, const std::vector<int>& members,
                                     const std::string& mine) override;

 private:
  const dcpHostServices_v1& services_;
  int group_size_;
};

}  // namespace dcp
