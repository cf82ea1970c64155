// `dcp-check bench` on the supervisor side: one bench point at a time on every
// rank (one DCP group of the whole world), with the same failure handling as a
// case (hang, crash, trap: the session dies with a diagnosis), then the
// upstream reduction (max over ranks per repeat, median over repeats).
#include <fmt/format.h>

#include <algorithm>

#include "bench.h"
#include "errors.h"
#include "supervisor_impl.h"
#include "worker_protocol.h"

namespace dcp {
namespace {

// A repeat is R*K back-to-back ops between two heartbeats; ranks that share a
// GPU time-slice, so allow far more than one call's deadline per repeat.
constexpr double kBenchDeadlineFloorS = 60;

}  // namespace

BenchResult Session::run_bench(const BenchSpec& spec) {
  Session::Impl& s = *impl_;
  s.drain_sent_ahead(nullptr);
  DCP_CHECK(s.config.backend == BackendKind::kGpu, UsageError,
            "bench needs the GPU backend: timings of the CPU model mean nothing");
  BenchResult result;
  result.world = s.config.world;
  result.dcp_size = s.config.world;
  result.geometry = s.config.geometry;
  result.spec = spec;
  result.meaningful = !s.env.ranks_share_gpu;
  for (int t : spec.tokens) {
    for (::dcp::Impl impl : spec.impls) {
      BenchPoint p;
      p.tokens = t;
      p.impl = impl;
      const Case c = bench_case(result.dcp_size, s.config.geometry, t);
      p.check = s.run_bench_point(c, impl, spec, &p.rank_us);
      // A failed check still reports its timings (every rank finished them);
      // the table then says the check failed.
      const bool timed = p.check.status == CaseStatus::kPass ||
                         (p.check.status == CaseStatus::kFail &&
                          p.rank_us.size() == static_cast<size_t>(result.world) &&
                          std::all_of(p.rank_us.begin(), p.rank_us.end(), [&](const auto& v) {
                            return v.size() == static_cast<size_t>(spec.repeats);
                          }));
      if (timed) reduce_point(p, result.dcp_size, s.config.geometry, c.out_dtype);
      result.points.push_back(std::move(p));
      if (s.dead) return result;
    }
  }
  return result;
}

CaseResult Session::Impl::run_bench_point(const Case& c, ::dcp::Impl impl, const BenchSpec& spec,
                                          std::vector<std::vector<double>>* rank_us) {
  CaseResult r;
  r.case_id = format_case_id(c);
  r.scenario = c;
  r.suite = impl == ::dcp::Impl::kStock ? "bench-stock" : "bench-direct";
  SessionConfig replay_config = config;
  if (impl == ::dcp::Impl::kStock) replay_config.kernel = load_kernel("stock")->info();
  replay_config.against.reset();
  r.replay = replay_line_for(replay_config, c);
  if (dead) {
    r.status = CaseStatus::kSkipped;
    r.message = "not run: " + dead_reason;
    return r;
  }
  current_case_index = next_case_index++;
  const nlohmann::json request =
      make_bench_request(current_case_index, c, replay_config.kernel.spec, spec.ops_per_graph,
                         spec.repeats, spec.replays, spec.warmup_replays);
  for (WorkerState& w : workers) {
    w.result.reset();
    w.bench.reset();
    w.last_op = -1;
    w.last_activity = SupervisorClock::now();
    if (w.lost()) continue;
    try {
      w.channel->send(request);
    } catch (const std::exception&) {
      w.channel->close();
    }
  }
  // find_failure reads config.timeout_s: widen it for this point only.
  const double saved_timeout = config.timeout_s;
  config.timeout_s = std::max(saved_timeout, kBenchDeadlineFloorS);
  std::optional<SupervisorClock::time_point> first_error;
  CaseResult out;
  while (true) {
    poll_workers(50);
    if (std::all_of(workers.begin(), workers.end(),
                    [](const WorkerState& w) { return w.result.has_value(); })) {
      out = finish_case(std::move(r), c);
      break;
    }
    if (auto failure = find_failure(c, first_error)) {
      out = finish_failed_case(std::move(r), c, *failure);
      break;
    }
  }
  config.timeout_s = saved_timeout;
  rank_us->clear();
  for (const WorkerState& w : workers) {
    if (w.bench && w.bench->contains("us")) {
      rank_us->push_back(w.bench->at("us").get<std::vector<double>>());
    }
  }
  if (out.status == CaseStatus::kPass &&
      (rank_us->size() != workers.size() ||
       std::any_of(rank_us->begin(), rank_us->end(), [&](const std::vector<double>& v) {
         return v.size() != static_cast<size_t>(spec.repeats);
       }))) {
    out.status = CaseStatus::kError;
    out.failure = FailureKind::kHarness;
    out.message = "a rank passed its check but reported no timings";
  }
  return out;
}

}  // namespace dcp
