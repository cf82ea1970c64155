// Rendezvous between the ranks of one group, relayed by the supervisor over its
// local socket. Used to exchange symmetric-memory handles and for barriers.
#pragma once

#include <string>
#include <vector>

namespace dcp {

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  // Every rank in `members` (global ranks, ascending) calls this with the same
  // `key`; each receives all contributions ordered as `members`. Throws
  // HarnessError on timeout or when the supervisor reports a dead peer.
  virtual std::vector<std::string> allgather(const std::string& key,
                                             const std::vector<int>& members,
                                             const std::string& mine) = 0;
  void barrier(const std::string& key, const std::vector<int>& members) {
    allgather(key, members, std::string());
  }
};

}  // namespace dcp
