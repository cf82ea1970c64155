// What the workers' launch observers (backends/gpu/launch_observer.h) saw,
// read from their tables on the status board: snapshots at a hang, and the
// residency warnings after each case.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "futex.h"
#include "supervisor_impl.h"

namespace dcp {

std::vector<RankLaunches> Session::Impl::launch_snapshots() {
  std::vector<RankLaunches> out;
  if (!board) return out;
  std::vector<uint32_t> asked(workers.size(), 0);
  for (size_t i = 0; i < workers.size(); ++i) {
    LaunchTable& t = *board->launch_table(workers[i].rank);
    if (t.state != ObserverState::kOn || workers[i].lost()) continue;
    asked[i] = t.snapshot_request.fetch_add(1, std::memory_order_acq_rel) + 1;
    futex_wake_all(t.snapshot_request);
  }
  // One deadline for all: a worker whose observer cannot answer (its process
  // stopped) costs the wait once, not once per rank.
  const auto deadline = SupervisorClock::now() + std::chrono::milliseconds(1500);
  for (size_t i = 0; i < workers.size(); ++i) {
    LaunchTable& t = *board->launch_table(workers[i].rank);
    bool answered = asked[i] == 0;
    while (!answered && SupervisorClock::now() < deadline) {
      const uint32_t done = t.snapshot_done.load(std::memory_order_acquire);
      answered = done == asked[i];
      if (!answered) futex_wait(t.snapshot_done, done, 20'000'000);
    }
    out.push_back({workers[i].rank, &t, answered && asked[i] != 0});
  }
  return out;
}

void Session::Impl::collect_launch_notes() {
  if (!board) return;
  if (env.launch_observation.empty()) {
    const LaunchTable& t = *board->launch_table(0);
    env.launch_observation = std::string(t.note, strnlen(t.note, sizeof t.note));
  }
  warnings_read.resize(static_cast<size_t>(config.world), 0);
  bool added = false;
  for (int r = 0; r < config.world; ++r) {
    const LaunchTable& t = *board->launch_table(r);
    const uint32_t n =
        std::min<uint32_t>(t.num_warnings.load(std::memory_order_acquire), kMaxResidencyWarnings);
    for (uint32_t& i = warnings_read[static_cast<size_t>(r)]; i < n; ++i) {
      const std::string text(t.warnings[i], strnlen(t.warnings[i], kWarningBytes));
      auto it = std::find_if(residency_seen.begin(), residency_seen.end(),
                             [&](const auto& w) { return w.first == text; });
      if (it == residency_seen.end()) {
        residency_seen.push_back({text, {}});
        it = residency_seen.end() - 1;
      }
      it->second.push_back(r);
      added = true;
    }
  }
  if (!added) return;
  env.residency_warnings.clear();
  for (const auto& [text, ranks] : residency_seen) {
    // With --against either kernel may have launched it: the name says which.
    const std::string who = config.against ? "" : fmt::format("kernel '{}': ", config.kernel.name);
    env.residency_warnings.push_back(fmt::format("{}{} (rank{} {})", who, text,
                                                 ranks.size() > 1 ? "s" : "",
                                                 fmt::join(ranks, ", ")));
  }
}

}  // namespace dcp
