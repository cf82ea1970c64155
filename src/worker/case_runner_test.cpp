// The case runner checks batch k beside batch k + 1: its results must be
// exactly those of checking every call in sequence.
#include "case_runner.h"

#include <doctest/doctest.h>

#include "checker.h"
#include "geometry.h"
#include "plan.h"

namespace dcp {
namespace {

// Returns the reference output of every call, one element wrong in `bad_ops`.
class ScriptedBackend final : public RankBackend {
 public:
  ScriptedBackend(const BackendConfig& bc, std::vector<int> bad_ops)
      : bc_(bc), bad_ops_(std::move(bad_ops)) {}
  std::string name() const override { return "scripted"; }
  void begin_case(const Case&) override {}
  std::vector<CallOutput> run_batch(const Case& c, const Batch& batch) override {
    batch_tokens.push_back(c.num_tokens);
    std::vector<std::vector<uint8_t>> outs;
    for (const CallInputs& in : batch.calls) outs.push_back(output_of(c, in.op_idx));
    return owned_outputs(std::move(outs), output_bytes(c));
  }
  std::vector<uint8_t> output_of(const Case& c, int op) const {
    std::vector<uint8_t> out = rounded_reference_output(c, bc_.group_idx, bc_.group_rank, op);
    if (std::find(bad_ops_.begin(), bad_ops_.end(), op) != bad_ops_.end()) {
      out[out.size() / 2 + 1] ^= 0x40;  // one element far off
    }
    return out;
  }
  std::vector<int> batch_tokens;  // the T of each batch's case, in run order

 private:
  BackendConfig bc_;
  std::vector<int> bad_ops_;
};

TEST_CASE("overlapped checks give the counts, first mismatches and hash of checking in order") {
  Case c;
  c.dcp_size = 2;
  c.geometry = *find_geometry("kimi");
  c.num_tokens = 64;  // 1 MiB outputs: checked beside the next call
  c.num_calls = 5;
  c.mode = ExecMode::kEager;
  c.seed = 0x0a1;
  BackendConfig bc;
  bc.dcp_size = 2;
  bc.group_rank = 1;
  bc.global_rank = 1;
  bc.members = {0, 1};
  bc.geometry = c.geometry;
  ScriptedBackend backend(bc, {3, 1});
  CaseRunContext ctx;
  ctx.backend_config = &bc;
  ctx.profile.num_threads = 2;
  std::vector<int> progress;
  ctx.progress = [&](int op) { progress.push_back(op); };
  std::vector<KeptCall> outputs;
  ctx.outputs = &outputs;
  const RankCaseResult r = run_case_on_rank(c, backend, ctx);
  REQUIRE(r.error.empty());

  RankCaseResult want;
  uint64_t hash = kFnvOffset;
  std::vector<std::vector<uint8_t>> want_outputs;
  for (int op = 0; op < c.num_calls; ++op) {
    std::vector<uint8_t> out = backend.output_of(c, op);
    const CallCheck k = check_call_output(c, 0, 1, 1, op, out, ctx.profile);
    want.num_checked += k.num_checked;
    want.num_mismatches += k.num_mismatches;
    for (const Mismatch& m : k.first_mismatches) want.first_mismatches.push_back(m);
    hash = fold_output_digest(hash, output_digest(out));
    want_outputs.push_back(std::move(out));
  }
  CHECK(r.num_checked == want.num_checked);
  CHECK(r.num_mismatches == 2);
  CHECK(r.num_mismatches == want.num_mismatches);
  REQUIRE(r.first_mismatches.size() == 2);
  CHECK(r.first_mismatches[0].op_idx == 1);  // the first failing call first
  CHECK(r.first_mismatches[1].op_idx == 3);
  CHECK(r.output_hash == hash);
  REQUIRE(outputs.size() == want_outputs.size());
  for (size_t op = 0; op < outputs.size(); ++op) {
    CHECK(outputs[op].op_idx == static_cast<int>(op));
    CHECK(outputs[op].num_tokens == c.num_tokens);
    CHECK(outputs[op].output == want_outputs[op]);
    CHECK(outputs[op].lse.empty());  // the scripted backend emits no combined LSE
  }
  CHECK_FALSE(r.passed);
  // A heartbeat before each call and after each check, checks in op order.
  CHECK(progress == std::vector<int>{0, 1, 0, 2, 1, 3, 2, 4, 3, 4});
  CHECK(r.phases.check_ms > 0);
}

TEST_CASE("a case run in two steps leaves its last check pending and gives the one-step result") {
  Case c;
  c.dcp_size = 2;
  c.geometry = *find_geometry("kimi");
  c.num_tokens = 64;  // big enough to be checked on the side
  c.num_calls = 3;
  c.seed = 0x0b2;
  BackendConfig bc;
  bc.dcp_size = 2;
  bc.group_rank = 0;
  bc.members = {0, 1};
  bc.geometry = c.geometry;
  ScriptedBackend backend(bc, {2});  // the last call is wrong
  CaseRunContext ctx;
  ctx.backend_config = &bc;
  ctx.profile.num_threads = 2;
  const RankCaseResult whole = run_case_on_rank(c, backend, ctx);

  RankCaseRun run(c, backend, ctx);
  run.start();
  CHECK(run.check_pending());
  const RankCaseResult split = run.finish();
  CHECK(split.num_checked == whole.num_checked);
  CHECK(split.num_mismatches == 1);
  CHECK(split.num_mismatches == whole.num_mismatches);
  REQUIRE(split.first_mismatches.size() == 1);
  CHECK(split.first_mismatches[0].op_idx == 2);
  CHECK(split.output_hash == whole.output_hash);
  CHECK_FALSE(split.passed);
}

// A graph set's calls run as one-call batches, each against the case with its
// own T: the backend, the checker and the hash all see that T.
TEST_CASE("a graph set's calls run and are checked with their own token counts") {
  Case c;
  c.dcp_size = 2;
  c.geometry = *find_geometry("tiny");
  c.num_tokens = 32;
  c.num_calls = 8;
  c.num_slots = 2;
  c.mode = ExecMode::kGraphSet;
  c.seed = 0x6e7;
  BackendConfig bc;
  bc.dcp_size = 2;
  bc.members = {0, 1};
  bc.geometry = c.geometry;
  const std::vector<PlannedBatch> plan = plan_case(c, 0);
  const int bad_op = plan[5].calls[0].op_idx;
  ScriptedBackend backend(bc, {bad_op});
  CaseRunContext ctx;
  ctx.backend_config = &bc;
  const RankCaseResult r = run_case_on_rank(c, backend, ctx);
  REQUIRE(r.error.empty());
  std::vector<int> want_tokens;
  RankCaseResult want;
  uint64_t hash = kFnvOffset;
  for (const PlannedBatch& planned : plan) {
    want_tokens.push_back(planned.num_tokens);
    const Case k = batch_case(c, planned);
    const int op = planned.calls[0].op_idx;
    std::vector<uint8_t> out = rounded_reference_output(k, 0, 0, op);
    if (op == bad_op) out[out.size() / 2 + 1] ^= 0x40;
    want.num_checked += check_call_output(k, 0, 0, 0, op, out, ctx.profile).num_checked;
    hash = fold_output_digest(hash, output_digest(out));
  }
  CHECK(backend.batch_tokens == want_tokens);
  CHECK(r.num_checked == want.num_checked);
  CHECK(r.num_mismatches == 1);
  REQUIRE(r.first_mismatches.size() == 1);
  CHECK(r.first_mismatches[0].op_idx == bad_op);
  CHECK(tokens_of_op(c, bad_op) == plan[5].num_tokens);
  CHECK(r.output_hash == hash);
}

}  // namespace
}  // namespace dcp
