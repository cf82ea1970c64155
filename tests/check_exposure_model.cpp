// A model, not a measurement (not a test): of the device check's time in a
// stress run, how much lies on a rank's chain of calls with the check on the
// op stream and with it aside (DCP_CHECK_ASIDE=1; docs/DESIGN.md, "The check
// aside"). It plans the random cases `stress` draws (seed 11, kimi) and
// prices each call's check by its T as `gpu_check_bench` measured it on a
// 1/8 MPS share of an H100 (W = 8: 36 us at T = 1, 108 at 64, 174 at 128).
//   check_exposure_model [CASES]   (default 20000)
// A check is on the chain when something later waits for it: on the op
// stream every check delays the next call on its slot (the longer slot
// decides a pipelined or graph batch); aside only a batch's last check (the
// host collects the batch) and checks whose buffers the next call reuses (a
// graph's replays on one context and slot) still are.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "geometry.h"
#include "plan.h"
#include "random_case.h"

namespace {

double check_us(int tokens) { return 35 + 1.08 * tokens; }

struct Exposure {
  double all = 0, in_stream = 0, aside = 0;
  void add(double a, double in, double as) { all += a, in_stream += in, aside += as; }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace dcp;
  const long cases = argc > 1 ? std::atol(argv[1]) : 20000;
  const Geometry kimi = *find_geometry("kimi");
  Exposure total;
  std::map<std::string, Exposure> by_mode;
  long calls = 0, batches = 0;
  for (long i = 0; i < cases; ++i) {
    for (const PlannedBatch& b : plan_case(random_case(11, static_cast<uint64_t>(i), 8, kimi), 0)) {
      if (b.calls.empty()) continue;
      const double us = check_us(b.num_tokens);
      const auto n = static_cast<double>(b.calls.size());
      std::map<int, double> per_slot;
      std::map<std::pair<int, int>, double> per_graph;  // replays sharing buffers
      for (const PlannedCall& pc : b.calls) {
        per_slot[pc.slot] += 1;
        per_graph[{pc.context, pc.slot}] += 1;
      }
      auto most = [](const auto& m) {
        double x = 0;
        for (const auto& kv : m) x = std::max(x, kv.second);
        return x;
      };
      const char* mode = b.mode == ExecMode::kEager       ? "eager"
                         : b.mode == ExecMode::kPipelined ? "pipelined"
                                                          : "graph";
      const double in = b.mode == ExecMode::kEager ? n : most(per_slot);
      const double aside = b.mode == ExecMode::kGraph ? most(per_graph) : 1;
      total.add(n * us, in * us, aside * us);
      by_mode[mode].add(n * us, in * us, aside * us);
      calls += static_cast<long>(n);
      ++batches;
    }
  }
  std::printf("%ld cases, %ld calls in %ld batches (%.2f a batch)\n", cases, calls, batches,
              static_cast<double>(calls) / static_cast<double>(batches));
  std::printf("check time on the chain: op stream %.0f%%, aside %.0f%%\n",
              100 * total.in_stream / total.all, 100 * total.aside / total.all);
  for (const auto& [mode, e] : by_mode) {
    std::printf("  %-9s %3.0f%% of the check time; on the chain: op stream %3.0f%%, aside %3.0f%%\n",
                mode.c_str(), 100 * e.all / total.all, 100 * e.in_stream / e.all,
                100 * e.aside / e.all);
  }
}
