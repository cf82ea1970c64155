#include "plugin_services.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "errors.h"
#include "hex.h"

namespace dcp {
namespace {

// Contributions of one round: 'S' + hex data (a service allgather), or
// 'D' + status digit + cause + message (init finished; cause 'I' for a
// failure dcp-check injected, 'R' for a root failure, 'P' for one that
// followed from a peer's, seen in a service call).
constexpr char kService = 'S';
constexpr char kDone = 'D';

}  // namespace

GroupInit::GroupInit(Rendezvous& rendezvous, std::string key, std::vector<int> members,
                     int group_rank, LogFn log)
    : rendezvous_(rendezvous),
      key_(std::move(key)),
      members_(std::move(members)),
      group_rank_(group_rank),
      log_(std::move(log)) {
  services_.struct_size = sizeof services_;
  services_.handle = this;
  services_.allgather = &GroupInit::allgather_cb;
  services_.barrier = &GroupInit::barrier_cb;
  services_.log = &GroupInit::log_cb;
}

std::vector<std::string> GroupInit::round(const std::string& mine) {
  std::vector<std::string> all =
      rendezvous_.allgather(fmt::format("{}/init{}", key_, round_++), members_, mine);
  DCP_CHECK(all.size() == members_.size(), HarnessError, "init round returned {} of {} records",
            all.size(), members_.size());
  return all;
}

dcpStatus_t GroupInit::allgather_cb(void* handle, const void* send, size_t bytes, void* recv) {
  auto* self = static_cast<GroupInit*>(handle);
  try {
    if (!self->broken_.empty()) return DCP_STATUS_INTERNAL;
    if (bytes > (size_t{1} << 24) || (bytes > 0 && (send == nullptr || recv == nullptr))) {
      self->broken_ = fmt::format("allgather of {} bytes with send {} recv {} refused", bytes,
                                  send ? "set" : "NULL", recv ? "set" : "NULL");
      return DCP_STATUS_INVALID_ARGUMENT;
    }
    const std::vector<std::string> all =
        self->round(std::string(1, kService) + hex_encode(send, bytes));
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].empty() || all[i][0] != kService) {
        self->broken_ =
            fmt::format("group rank {} finished init while this rank was in an allgather", i);
        self->broken_by_peer_ = true;
        return DCP_STATUS_INTERNAL;
      }
      if (all[i].size() != 1 + 2 * bytes) {
        self->broken_ = fmt::format("group rank {} gathered {} bytes, this rank {}", i,
                                    (all[i].size() - 1) / 2, bytes);
        return DCP_STATUS_INVALID_ARGUMENT;
      }
    }
    for (size_t i = 0; i < all.size(); ++i) {
      hex_decode(all[i].substr(1), static_cast<uint8_t*>(recv) + i * bytes, bytes);
    }
    return DCP_STATUS_OK;
  } catch (const std::exception& e) {
    self->broken_ = e.what();
    return DCP_STATUS_INTERNAL;
  }
}

dcpStatus_t GroupInit::barrier_cb(void* handle) {
  return allgather_cb(handle, nullptr, 0, nullptr);
}

void GroupInit::log_cb(void* handle, int32_t level, const char* message) {
  auto* self = static_cast<GroupInit*>(handle);
  if (self->log_ && message != nullptr) self->log_(level, message);
}

void GroupInit::agree(dcpStatus_t status, const std::string& message, bool injected) {
  std::string text = message;
  if (status != DCP_STATUS_OK && !broken_.empty() && text.empty()) text = broken_;
  const char cause = injected ? 'I' : broken_by_peer_ ? 'P' : 'R';
  const std::string mine = fmt::format("{}{}{}{}", kDone, static_cast<int>(status), cause, text);
  while (true) {
    const std::vector<std::string> all = round(mine);
    bool everyone_done = true;
    for (const std::string& s : all) everyone_done = everyone_done && !s.empty() && s[0] == kDone;
    if (!everyone_done) continue;  // a peer is still in init: it sees our 'D' and finishes
    // The lowest-ranked injected failure, else root failure, else any ('*').
    int culprit = -1;
    for (const char want : {'I', 'R', '*'}) {
      for (size_t i = 0; i < all.size() && culprit < 0; ++i) {
        if (all[i].size() > 2 && all[i][1] - '0' != DCP_STATUS_OK &&
            (want == '*' || all[i][2] == want)) {
          culprit = static_cast<int>(i);
        }
      }
    }
    if (culprit >= 0) {
      const size_t i = culprit;
      const int code = all[i][1] - '0';
      const std::string why = all[i].substr(3).empty() ? "no message" : all[i].substr(3);
      const std::string msg = fmt::format(
          "plugin init failed on rank {} (group rank {}): {}; every rank of the group stopped",
          members_[i], i, why);
      if (code == DCP_STATUS_UNSUPPORTED || code == DCP_STATUS_INVALID_ARGUMENT)
        throw UsageError(msg);
      throw KernelFault(msg);
    }
    return;
  }
}

std::vector<std::string> ServicesRendezvous::allgather(const std::string& key,
                                                       const std::vector<int>& members,
                                                       const std::string& mine) {
  DCP_CHECK(static_cast<int>(members.size()) == group_size_, HarnessError,
            "{}: services gather the whole group of {}, not {}", key, group_size_, members.size());
  std::vector<uint64_t> sizes(group_size_);
  const uint64_t my_size = mine.size();
  DCP_CHECK(services_.allgather(services_.handle, &my_size, sizeof my_size, sizes.data()) ==
                DCP_STATUS_OK,
            HarnessError, "{}: allgather of sizes failed", key);
  uint64_t max_size = 0;
  for (uint64_t s : sizes) max_size = std::max(max_size, s);
  std::string padded = mine;
  padded.resize(max_size);
  std::string all(max_size * group_size_, '\0');
  DCP_CHECK(
      services_.allgather(services_.handle, padded.data(), max_size, all.data()) == DCP_STATUS_OK,
      HarnessError, "{}: allgather failed", key);
  std::vector<std::string> out;
  for (int i = 0; i < group_size_; ++i) out.push_back(all.substr(i * max_size, sizes[i]));
  return out;
}

}  // namespace dcp
