// The worker's Rendezvous: allgathers relayed by the supervisor over the
// worker's socket (`gather` up, `gathered` down). The worker reads the socket
// only when it expects a message, so no reader thread is needed. A `case`
// message that arrives while it waits (the supervisor sends the next case
// ahead) is kept in `early` for the worker, in arrival order; a `shutdown`
// found there (the worker read it ahead) ends the wait like one that arrives.
#pragma once

#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rendezvous.h"
#include "socket_channel.h"

namespace dcp {

// Thrown (not a std::exception, so no catch-all for errors swallows it) when
// the supervisor says `shutdown` while this worker waits for something else.
struct ShutdownRequested {};

class SocketRendezvous final : public Rendezvous {
 public:
  SocketRendezvous(SocketChannel& channel, int rank, double timeout_s,
                   std::deque<nlohmann::json>* early = nullptr)
      : channel_(channel), rank_(rank), timeout_s_(timeout_s), early_(early) {}
  std::vector<std::string> allgather(const std::string& key, const std::vector<int>& members,
                                     const std::string& mine) override;

 private:
  SocketChannel& channel_;
  int rank_;
  double timeout_s_;
  std::deque<nlohmann::json>* early_;
};

}  // namespace dcp
