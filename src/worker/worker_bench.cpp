#include "worker_bench.h"

#include <fmt/format.h>

#include "errors.h"
#include "generator.h"

namespace dcp {
namespace {

// K calls on slot 0, op i with its own generated inputs (distinct buffers).
Batch bench_batch(const Case& c, const BackendConfig& bc, int ops) {
  Batch batch;
  batch.mode = ExecMode::kGraph;
  for (int i = 0; i < ops; ++i) {
    CallInputs call;
    call.op_idx = i;
    SourceInputs in = generate_source_inputs(c, bc.group_idx, i, bc.group_rank);
    call.partial_output = std::move(in.partial_output);
    call.partial_lse = std::move(in.partial_lse);
    batch.calls.push_back(std::move(call));
  }
  return batch;
}

RankCaseResult error_result(const Case& c, int rank, const std::exception& e) {
  RankCaseResult r;
  r.case_id = format_case_id(c);
  r.rank = rank;
  r.error = e.what();
  r.failure = failure_kind_of(e);
  return r;
}

}  // namespace

nlohmann::json run_bench_request(const nlohmann::json& request, WorkerBenchHooks& hooks) {
  const int index = request.at("index").get<int>();
  const std::string id = request.at("id").get<std::string>();
  std::string parse_error;
  const std::optional<Case> parsed = parse_case_id(id, &parse_error);
  DCP_CHECK(parsed.has_value(), HarnessError, "bench: cannot parse case id {}: {}", id,
            parse_error);
  const Case& c = *parsed;
  const std::string kernel = request.at("kernel").get<std::string>();
  RankBackend::BenchTiming timing;
  timing.warmup = request.at("warmup").get<int>();
  timing.repeats = request.at("repeats").get<int>();
  timing.replays = request.at("replays").get<int>();
  const int ops = request.at("ops_per_graph").get<int>();
  std::vector<double> us;
  RankCaseResult result;
  try {
    auto [bc, backend] = hooks.backend_for(c, kernel);
    hooks.context.backend_config = bc;
    const std::string key = fmt::format("bench{}-g{}x{}", index, c.dcp_size, bc->group_idx);
    int round = 0;
    auto barrier = [&] {
      hooks.rendezvous->barrier(fmt::format("{}-r{}", key, round), bc->members);
      if (hooks.context.progress) hooks.context.progress(round);
      ++round;
    };
    hooks.rendezvous->barrier(key + "-begin", bc->members);
    backend->begin_case(c);
    hooks.rendezvous->barrier(key + "-go", bc->members);
    us = backend->bench(c, bench_batch(c, *bc, ops), timing, barrier);
    // The same backend, one eager call checked like any case: a bench of a
    // wrong kernel fails.
    hooks.rendezvous->barrier(key + "-check", bc->members);
    result = run_case_on_rank(c, *backend, hooks.context);
  } catch (const std::exception& e) {
    result = error_result(c, hooks.rank, e);
  }
  return {{"type", "result"}, {"index", index}, {"result", result}, {"bench", {{"us", us}}}};
}

}  // namespace dcp
