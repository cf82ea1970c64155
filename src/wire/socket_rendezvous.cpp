#include "socket_rendezvous.h"

#include <algorithm>
#include <chrono>

#include "errors.h"

namespace dcp {

std::vector<std::string> SocketRendezvous::allgather(const std::string& key,
                                                     const std::vector<int>& members,
                                                     const std::string& mine) {
  DCP_CHECK(std::find(members.begin(), members.end(), rank_) != members.end(), HarnessError,
            "rank {} joins rendezvous '{}' without being a member", rank_, key);
  channel_.send(
      {{"type", "gather"}, {"key", key}, {"members", members}, {"data", hex_encode(mine)}});
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s_ * 1000));
  // The worker may have read a `shutdown` ahead, behind a case (its early queue).
  auto shutdown_read_ahead = [&] {
    return early_ != nullptr &&
           std::any_of(early_->begin(), early_->end(), [](const nlohmann::json& m) {
             return m.value("type", "") == "shutdown";
           });
  };
  while (true) {
    if (shutdown_read_ahead()) throw ShutdownRequested{};
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    DCP_CHECK(left > 0, HarnessError, "rank {}: rendezvous '{}' timed out after {} s", rank_, key,
              timeout_s_);
    auto msg = channel_.receive(std::min(left, 1.0));
    if (!msg) continue;
    const std::string type = msg->value("type", "");
    if (type == "shutdown") throw ShutdownRequested{};
    if (type == "case" && early_ != nullptr) {
      early_->push_back(std::move(*msg));
      continue;
    }
    DCP_CHECK(type == "gathered" && msg->value("key", "") == key, HarnessError,
              "rank {}: expected gathered '{}', got {:.200}", rank_, key, msg->dump());
    std::vector<std::string> out;
    for (const auto& item : msg->at("data")) out.push_back(hex_decode(item.get<std::string>()));
    DCP_CHECK(out.size() == members.size(), HarnessError,
              "rank {}: rendezvous '{}' returned {} entries for {} members", rank_, key, out.size(),
              members.size());
    return out;
  }
}

}  // namespace dcp
