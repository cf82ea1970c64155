#include "worker_bench.h"

#include <doctest/doctest.h>

#include "bench.h"
#include "geometry.h"

namespace dcp {
namespace {

struct CountingRendezvous : Rendezvous {
  int rounds = 0;
  std::vector<std::string> allgather(const std::string&, const std::vector<int>& members,
                                     const std::string& data) override {
    ++rounds;
    return std::vector<std::string>(members.size(), data);
  }
};

// Times nothing: reports 1.5, 2.5, ... us and writes all-zero outputs (wrong).
struct FakeBackend : RankBackend {
  size_t ops = 0;
  std::string name() const override { return "fake"; }
  void begin_case(const Case&) override {}
  std::vector<CallOutput> run_batch(const Case& c, const Batch& b) override {
    const size_t bytes = output_bytes(c);
    return owned_outputs(
        std::vector<std::vector<uint8_t>>(b.calls.size(), std::vector<uint8_t>(bytes, 0)), bytes);
  }
  std::vector<double> bench(const Case&, const Batch& b, const BenchTiming& t,
                            const std::function<void()>& barrier) override {
    ops = b.calls.size();
    barrier();
    std::vector<double> us;
    for (int i = 0; i < t.repeats; ++i) {
      barrier();
      us.push_back(1.5 + i);
    }
    return us;
  }
};

TEST_CASE("a bench request times K ops with a barrier per repeat, then really checks the output") {
  const Geometry g = *find_geometry("kimi");
  const Case c = bench_case(2, g, 8);
  CountingRendezvous rdv;
  FakeBackend backend;
  BackendConfig bc;
  bc.dcp_size = 2;
  bc.members = {0, 1};
  bc.geometry = g;
  WorkerBenchHooks hooks;
  hooks.rendezvous = &rdv;
  int heartbeats = 0;
  hooks.context.progress = [&](int) { ++heartbeats; };
  std::string asked = "direct";
  hooks.backend_for = [&](const Case&, const std::string& kernel) {
    asked = kernel;
    return std::pair<const BackendConfig*, RankBackend*>(&bc, &backend);
  };
  const nlohmann::json reply =
      run_bench_request(make_bench_request(3, c, "stock", 10, 4, 5, 2), hooks);
  CHECK(asked == "stock");
  CHECK(backend.ops == 10);
  CHECK(reply.at("index") == 3);
  CHECK(reply.at("bench").at("us").get<std::vector<double>>() ==
        std::vector<double>{1.5, 2.5, 3.5, 4.5});
  CHECK(heartbeats >= 5);      // one per barrier at least: the supervisor's deadline is per repeat
  CHECK(rdv.rounds == 3 + 5);  // begin, go, check + warm-up and 4 repeats
  const auto result = reply.at("result").get<RankCaseResult>();
  CHECK(result.error.empty());
  CHECK_FALSE(result.passed);  // all-zero outputs are wrong: a bench of a broken kernel fails
  CHECK(result.num_checked > 0);
  CHECK(result.num_mismatches > 0);
}

}  // namespace
}  // namespace dcp
