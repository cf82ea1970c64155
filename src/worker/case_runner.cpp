#include "case_runner.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <span>
#include <thread>

#include "check_thread.h"
#include "device_verdict.h"
#include "errors.h"
#include "generator.h"
#include "mix.h"
#include "output_digest.h"
#include "plan.h"
#include "thread_pool.h"

namespace dcp {
namespace {

using Clock = std::chrono::steady_clock;

bool batch_has_op(const PlannedBatch& batch, int op_idx) {
  return std::any_of(batch.calls.begin(), batch.calls.end(),
                     [&](const PlannedCall& call) { return call.op_idx == op_idx; });
}

// A backend that produces its inputs on the device gets the output's streams
// and the (small) LSE; the others get every byte. `device_check`: the call is
// checked on the device (its parameters and row kinds go with it).
CallInputs make_call_inputs(const Case& c, const BackendConfig& bc, const PlannedCall& planned,
                            bool device_produces, bool device_check) {
  CallInputs call;
  call.op_idx = planned.op_idx;
  call.slot = planned.slot;
  call.context = planned.context;
  call.skew_ns = planned.skew_ns;
  const OpGenerator gen(c, bc.group_idx, planned.op_idx);
  if (device_produces) {
    // The row kinds of every source: the device's LSE stream reads this
    // rank's, the device checker all of them.
    call.row_kinds = row_kinds_of(c, gen);
    call.output_streams = output_streams(gen, c, bc.group_rank);
    if (c.producer == Producer::kDefault) {
      call.lse_stream = lse_stream_of(gen, c, bc.group_rank);
    } else {  // the slow producer copies the LSE's bytes
      call.partial_lse = generate_source_lse(gen, c, bc.group_rank);
    }
  } else {
    SourceInputs inputs = generate_source_inputs(gen, c, bc.group_rank);
    call.partial_output = std::move(inputs.partial_output);
    call.partial_lse = std::move(inputs.partial_lse);
  }
  if (c.empty != EmptyPattern::kNone) {
    call.seq_lens = gen.layout().seq_lens.at(bc.group_rank);
    call.query_start_loc = gen.layout().query_start_loc;
  }
  if (device_check) call.device_check = device_check_params(c, gen, bc.group_rank);
  return call;
}

// Faults that act before the batch holding the fault's op is dispatched.
void fire_pre_dispatch_fault(const FaultSpec& fault, const BackendConfig& bc,
                             const std::string& backend_name) {
  switch (fault.kind) {
    case FaultSpec::Kind::kCrash: {
      rlimit no_core{0, 0};
      setrlimit(RLIMIT_CORE, &no_core);  // a test crash must not leave a core file
      std::raise(SIGSEGV);
      std::abort();
    }
    case FaultSpec::Kind::kHang:
      // Stop participating: peers spin on flags this rank never writes.
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    case FaultSpec::Kind::kStall: {
      // Shorter than the spin bound, so the run must still pass.
      const double stall_s = std::min(3.0, bc.spin_timeout_s / 2);
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(stall_s * 1e3)));
      return;
    }
    case FaultSpec::Kind::kCudaError:
    case FaultSpec::Kind::kOom:
      throw_injected_device_fault(fault.kind, backend_name == "gpu", bc.global_rank);
    case FaultSpec::Kind::kCorrupt:
    case FaultSpec::Kind::kNone:
      return;
  }
}

void corrupt_output(std::span<uint8_t> out) {
  if (out.size() < 2) return;
  // Flip an exponent bit of the middle element: wrong by far more than any
  // tolerance, whatever its value (a zero becomes 2.0 in fp16 and bf16).
  out[(out.size() / 4) * 2 + 1] ^= 0x40;
}

void accumulate_check(RankCaseResult& r, CallCheck&& check) {
  r.num_checked += check.num_checked;
  r.num_mismatches += check.num_mismatches;
  r.num_nan += check.num_nan;
  for (auto& m : check.first_mismatches) {
    if (r.first_mismatches.size() < 8) r.first_mismatches.push_back(std::move(m));
  }
}

}  // namespace

// One batch's outputs and the check running on them in the background.
struct PendingCheck {
  Case c;  // the batch's case (batch_case: a graph set's call has its own T)
  std::vector<int> ops;
  std::vector<CallOutput> outputs;  // dropped after the check: leases go back at once
  std::future<std::vector<CallCheck>> checks;
  std::vector<uint64_t> digests;  // call_output_digest of each output, written by the check
  double check_ms = 0;  // written by the check, read after checks.get()
  CheckTally tally;     // written by the check
  std::string disagreement;  // the first audited call whose two verdicts differ
};

// Checks batch k on the runner's check thread (check_thread.h) while the
// caller generates and runs batch k + 1. Results are merged in op order, so
// the counts, the first mismatches and the output hash are those of checking
// in sequence. A small batch is checked inline: handing it to a thread costs
// more than it saves.
constexpr size_t kOverlapMinBytes = size_t{256} << 10;  // 128 Ki 16-bit elements

class CheckPipeline {
 public:
  CheckPipeline(const CaseRunContext& ctx, RankCaseResult& result)
      : ctx_(ctx), bc_(*ctx.backend_config), result_(result) {}
  ~CheckPipeline() {
    if (pending_ && pending_->checks.valid()) pending_->checks.wait();  // never outlive it
  }

  void submit(const Case& c, std::vector<int> ops, std::vector<CallOutput> outputs) {
    finish();
    pending_ = std::make_unique<PendingCheck>();
    pending_->c = c;
    pending_->ops = std::move(ops);
    pending_->outputs = std::move(outputs);
    PendingCheck* p = pending_.get();
    size_t bytes = 0;
    for (const auto& out : p->outputs) bytes += out.output().size() + out.lse().size();
    std::packaged_task<std::vector<CallCheck>()> task([this, p] {
      PhaseClock clock;
      std::vector<CallCheck> checks;
      for (size_t i = 0; i < p->outputs.size(); ++i) checks.push_back(check_one(*p, i));
      clock.lap(p->check_ms);
      return checks;
    });
    pending_->checks = task.get_future();
    if (bytes < kOverlapMinBytes) {  // small: checked now, inline
      task();
      finish();
      return;
    }
    CheckThread::for_this_thread().post(std::move(task));
  }

  // Waits for the pending check and merges it (op order), then hashes. A
  // disagreement between the two checkers is the harness's failure.
  void finish() {
    if (!pending_) return;
    PhaseClock wait;
    std::vector<CallCheck> checks = pending_->checks.get();
    double waited_ms = 0;
    wait.lap(waited_ms);
    if (count_wait_) result_.phases.check_wait_ms += waited_ms;
    result_.phases.check_ms += pending_->check_ms;
    result_.check += pending_->tally;
    if (!pending_->disagreement.empty() && result_.error.empty()) {
      result_.error = pending_->disagreement;
      result_.failure = FailureKind::kHarness;
    }
    for (size_t i = 0; i < checks.size(); ++i) {
      hash_ = fold_output_digest(hash_, pending_->digests[i]);
      accumulate_check(result_, std::move(checks[i]));
      if (ctx_.progress) ctx_.progress(pending_->ops[i]);
    }
    if (ctx_.outputs != nullptr) {
      for (size_t i = 0; i < pending_->outputs.size(); ++i) {
        const CallOutput& out = pending_->outputs[i];
        KeptCall& kept = ctx_.outputs->emplace_back();
        kept.op_idx = pending_->ops[i];
        kept.num_tokens = pending_->c.num_tokens;
        kept.output.assign(out.output().begin(), out.output().end());
        kept.lse.assign(out.lse().begin(), out.lse().end());
      }
    }
    pending_.reset();
  }

  uint64_t hash() const { return hash_; }
  bool pending() const { return pending_ != nullptr; }
  // Some call so far failed the check (the case is failing): later calls
  // are copied back and checked on the CPU too.
  bool failing() const { return result_.num_mismatches > 0; }
  // A wait on another thread than the runner's is not the runner's check-wait.
  void stop_counting_wait() { count_wait_ = false; }

 private:
  const CaseRunContext& ctx_;
  const BackendConfig& bc_;
  RankCaseResult& result_;
  std::unique_ptr<PendingCheck> pending_;
  uint64_t hash_ = kFnvOffset;
  bool count_wait_ = true;

  // One call: the device's verdict when its bytes stayed there; else the CPU
  // checker's, compared with the device's when there is one (the audit).
  CallCheck check_one(PendingCheck& p, size_t i) const {
    const CallOutput& out = p.outputs[i];
    const int op = p.ops[i];
    const std::optional<DeviceCheckResult>& device = out.device_verdict();
    if (device && !out.has_bytes()) {
      ++p.tally.device_calls;
      p.digests.push_back(device->digest);
      return call_check_of(*device, p.c, bc_.global_rank, op);
    }
    CallCheck cpu = check_call_output(p.c, bc_.group_idx, bc_.group_rank, bc_.global_rank, op,
                                      out.output(), out.lse(), ctx_.profile);
    p.digests.push_back(call_output_digest(out, &ThreadPool::shared(ctx_.profile.num_threads)));
    if (!device) {
      ++p.tally.cpu_calls;
      return cpu;
    }
    ++p.tally.audited_calls;
    const std::string differ = checker_disagreement(
        call_check_of(*device, p.c, bc_.global_rank, op), device->digest, cpu, p.digests.back());
    if (!differ.empty()) {
      ++p.tally.disagreements;
      if (p.disagreement.empty()) {
        p.disagreement = fmt::format("rank {} call {}: {}", bc_.global_rank, op, differ);
      }
    }
    return cpu;
  }
};

namespace {

// Returns the guard-zone damage the backend found (one line each).
// The last batch's check is left pending in `pipeline`.
std::vector<std::string> run_batches(const Case& c, RankBackend& backend,
                                     const CaseRunContext& ctx, CheckPipeline& pipeline,
                                     RankCaseResult& result) {
  const BackendConfig& bc = *ctx.backend_config;
  const FaultSpec& fault = ctx.fault;
  const bool fault_here = fault.kind != FaultSpec::Kind::kNone && fault.rank == bc.global_rank &&
                          fault.case_index == ctx.case_index;
  // An op past the end of the case fires at its last op, so a fault always fires.
  const int fault_op = std::clamp(fault.op_idx, 0, std::max(0, num_ops(c) - 1));
  const bool device_produces = backend.produces_inputs();
  const bool device_check = ctx.profile.on_device && backend.checks_on_device() &&
                            device_checkable(c, ctx.profile);
  bool failing = false;  // a call of this case failed the device check
  PhaseTimes& phases = result.phases;
  std::vector<std::string> out_of_bounds;
  for (const PlannedBatch& planned : plan_case(c, bc.group_rank)) {
    if (planned.calls.empty()) continue;
    const Case call_case = batch_case(c, planned);
    PhaseClock clock;
    Batch batch;
    batch.mode = planned.mode;
    batch.phases = &phases;
    batch.out_of_bounds = &out_of_bounds;
    std::vector<int> ops;
    const bool fire = fault_here && batch_has_op(planned, fault_op);
    failing = failing || pipeline.failing();
    for (const PlannedCall& call : planned.calls) {
      CallInputs& in = batch.calls.emplace_back(
          make_call_inputs(call_case, bc, call, device_produces, device_check));
      // The CPU checker's share (CheckProfile::on_device): the audit's sample,
      // a failing case, kept outputs, and a corrupted call (the fault edits
      // the bytes on the host).
      in.copy_output = !device_check || failing || ctx.outputs != nullptr ||
                       audited_call(c, bc.group_idx, call.op_idx, ctx.profile.audit_one_in) ||
                       (fire && fault.kind == FaultSpec::Kind::kCorrupt);
      ops.push_back(call.op_idx);
    }
    clock.lap(phases.generate_ms);
    if (fire) fire_pre_dispatch_fault(fault, bc, backend.name());
    if (ctx.progress) ctx.progress(planned.calls.front().op_idx);
    clock.restart();
    // The backend's own laps inside run_batch; the rest of it is launch.
    auto inner = [&] {
      return phases.stage_ms + phases.setup_ms + phases.after_ms + phases.capture_ms +
             phases.wait_ms + phases.collect_ms;
    };
    const double accounted = inner();
    std::vector<CallOutput> outputs = backend.run_batch(call_case, batch);
    double run_ms = 0;
    clock.lap(run_ms);
    phases.launch_ms += run_ms - (inner() - accounted);
    DCP_CHECK(outputs.size() == batch.calls.size(), HarnessError,
              "backend returned {} outputs for {} calls", outputs.size(), batch.calls.size());
    if (fire && fault.kind == FaultSpec::Kind::kCorrupt) {
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (ops[i] != fault_op) continue;
        corrupt_output(outputs[i].output());
        outputs[i].drop_device_verdict();  // it judged the bytes before the corruption
      }
    }
    for (const CallOutput& out : outputs) {
      const auto& v = out.device_verdict();
      failing = failing || (v && v->num_mismatches > 0);
    }
    pipeline.submit(call_case, std::move(ops), std::move(outputs));
  }
  return out_of_bounds;
}

}  // namespace

// The output hash: kernels/output_digest.h's lanes hash (the name fnv1a is
// historical), and the call digest its two-level fold of 1 KiB blocks, the
// device checker's too (the same header), so a call's digest does not depend
// on which checker read it. Supers are hashed in parallel on `pool`.
uint64_t fnv1a(uint64_t hash, const std::vector<uint8_t>& bytes) {
  return fnv1a(hash, bytes.data(), bytes.size());
}

uint64_t fnv1a(uint64_t hash, const uint8_t* p, size_t n) { return digest_lanes(hash, p, n); }

uint64_t output_digest(std::span<const uint8_t> bytes, ThreadPool* pool) {
  const size_t n = bytes.size();
  const size_t supers = digest_supers(n);
  std::vector<uint64_t> digests(supers);
  auto digest_range = [&](int, int64_t begin, int64_t end) {
    for (auto s = static_cast<size_t>(begin); s < static_cast<size_t>(end); ++s) {
      digests[s] = digest_super(bytes.data(), n, s);
    }
  };
  const int threads = pool != nullptr ? pool->num_threads() : 1;
  if (threads > 1 && supers > 1) {
    pool->parallel_for(static_cast<int64_t>(supers),
                       static_cast<int>(std::min<size_t>(supers, static_cast<size_t>(threads))),
                       digest_range);
  } else {
    digest_range(0, 0, static_cast<int64_t>(supers));
  }
  return digest_fold(n, digests.data(), supers);
}

uint64_t call_output_digest(const CallOutput& out, ThreadPool* pool) {
  const uint64_t digest = output_digest(out.output(), pool);
  return out.lse().empty() ? digest : hash_in(digest, output_digest(out.lse(), pool));
}

uint64_t fold_output_digest(uint64_t hash, uint64_t digest) { return hash_in(hash, digest); }

RankCaseRun::RankCaseRun(const Case& c, RankBackend& backend, const CaseRunContext& ctx)
    : c_(c), backend_(backend), ctx_(ctx) {
  ctx_.profile.combined_lse = backend.emits_combined_lse();
  result_.case_id = format_case_id(c_);
  result_.rank = ctx_.backend_config->global_rank;
}

RankCaseRun::~RankCaseRun() = default;  // the pipeline waits for its pending check

void RankCaseRun::start() {
  start_time_ = Clock::now();
  pipeline_ = std::make_unique<CheckPipeline>(ctx_, result_);
  try {
    out_of_bounds_ = run_batches(c_, backend_, ctx_, *pipeline_, result_);
  } catch (const KernelRefusal& e) {
    start_threw_ = true;
    if (over_capacity(c_)) {
      result_.passed = true;  // the capacity case's one right answer
      result_.note = fmt::format("refused: {}", e.what());
    } else {
      result_.error = e.what();
      result_.failure = failure_kind_of(e);
    }
  } catch (const std::exception& e) {
    start_threw_ = true;
    result_.error = e.what();
    result_.failure = failure_kind_of(e);
  }
}

bool RankCaseRun::check_pending() const {
  return !start_threw_ && pipeline_ != nullptr && pipeline_->pending();
}

RankCaseResult RankCaseRun::finish_beside_next() {
  if (pipeline_ != nullptr) pipeline_->stop_counting_wait();
  return finish();
}

RankCaseResult RankCaseRun::finish() {
  if (pipeline_ != nullptr && !start_threw_) {
    try {
      pipeline_->finish();
      result_.output_hash = pipeline_->hash();
      RankCaseResult& result = result_;
      result.passed = result.num_mismatches == 0 && result.num_checked > 0;
      result.failure = check_failure(result.num_mismatches, result.num_nan, result.passed);
      if (over_capacity(c_)) {
        // Whatever the outputs hold: the workspace cannot hold T rows, so the
        // call wrote past it or dropped rows. The session ends (like a guard).
        result.failure = FailureKind::kOverCapacity;
        result.error = fmt::format(
            "the kernel accepted a call of T={} tokens over its workspace's max_tokens={}: it "
            "must refuse it (INVALID_ARGUMENT) on every rank before entering the exchange",
            c_.num_tokens, c_.geometry.max_tokens);
      }
      if (!out_of_bounds_.empty()) {
        // Every call still ran (a peer never waits for a rank that stopped early).
        result.failure = headline(FailureKind::kOutOfBounds, result.failure);
        result.error = fmt::format("{}{}", out_of_bounds_.front(),
                                   out_of_bounds_.size() > 1
                                       ? fmt::format(" (and {} more)", out_of_bounds_.size() - 1)
                                       : "");
      }
    } catch (const std::exception& e) {
      result_.error = e.what();
      result_.failure = failure_kind_of(e);
    }
  }
  if (!result_.error.empty()) result_.passed = false;
  result_.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start_time_).count();
  return std::move(result_);
}

RankCaseResult run_case_on_rank(const Case& c, RankBackend& backend, const CaseRunContext& ctx) {
  RankCaseRun run(c, backend, ctx);
  run.start();
  return run.finish();
}

}  // namespace dcp
