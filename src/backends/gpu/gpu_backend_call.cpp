// One call on the GPU backend: its shape, buffers and staging, the copy in,
// the preparation, the op (or its graph replay) and the device check
// (gpu_backend_impl.h).
#include "gpu_backend_impl.h"

namespace dcp::gpu_backend_detail {

namespace {

size_t elem_bytes(DType d) { return d == DType::kFp32 ? 4 : 2; }

// DCP_TRACE_STEPS=<ms> (diagnosis only, off by default): every step of a
// call is followed by a synchronize of its stream, and a step whose host call
// or whose completion took longer than <ms> is printed on stderr with the
// rank. It answers "what held the op up" (docs/DESIGN.md, "SM pressure").
class StepTrace {
 public:
  StepTrace(int rank, cudaStream_t s) : rank_(rank), s_(s) {}
  void mark(const char* step) {
    if (threshold_ms_ < 0) return;
    const double host_ms = lap();
    const cudaError_t err = cudaStreamSynchronize(s_);
    const double done_ms = lap();
    if (host_ms >= threshold_ms_ || done_ms >= threshold_ms_ || err != cudaSuccess) {
      fmt::print(stderr, "trace rank {}: {}: host call {:.3f} ms, then complete after {:.3f} ms{}\n",
                 rank_, step, host_ms, done_ms,
                 err == cudaSuccess ? "" : fmt::format(" ({})", cudaGetErrorName(err)));
    }
  }

 private:
  static double threshold() {  // read once per process: enqueue_call is a hot path
    static const double ms = [] {
      const char* v = std::getenv("DCP_TRACE_STEPS");
      return v == nullptr || *v == '\0' ? -1.0 : std::atof(v);
    }();
    return ms;
  }
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
    return ms;
  }
  int rank_;
  cudaStream_t s_;
  double threshold_ms_ = threshold();
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// DCP_STEP_TWICE=check|prep (diagnosis only, off by default): that step is
// launched twice per call, the second on the first's result (both are
// idempotent: the preparation rewrites the same inputs, the check's first run
// leaves its scratch zero and the second writes the same verdict). The
// throughput lost is the step's marginal cost in a real run, where the
// synchronised trace (DCP_TRACE_STEPS) times it alone (ci/gpu.sh perfdiag).
enum class TwiceStep { kNone, kCheck, kPrep };
TwiceStep step_twice() {  // read once per process: enqueue_call is a hot path
  static const TwiceStep step = [] {
    const char* v = std::getenv("DCP_STEP_TWICE");
    const std::string s = v == nullptr ? "" : v;
    return s == "check" ? TwiceStep::kCheck : s == "prep" ? TwiceStep::kPrep : TwiceStep::kNone;
  }();
  return step;
}

}  // namespace

// How long the slow producer's last token row is late.
constexpr uint32_t kSlowProducerDelayNs = 30'000;

CallShape GpuBackend::shape_of(const Case& c, const Batch& batch) const {
  const Geometry& g = cfg_.geometry;
  DCP_CHECK(c.dcp_size == cfg_.dcp_size, HarnessError,
            "case for a DCP group of {} sent to a backend of {}", c.dcp_size, cfg_.dcp_size);
  DCP_CHECK(c.geometry.heads_per_rank == g.heads_per_rank && c.geometry.head_dim == g.head_dim &&
                c.geometry.max_tokens == g.max_tokens,
            HarnessError,
            "case geometry H={} D={} max={} differs from the workspace's H={} D={} "
            "max={}",
            c.geometry.heads_per_rank, c.geometry.head_dim, c.geometry.max_tokens, g.heads_per_rank,
            g.head_dim, g.max_tokens);
  // max_tokens + 1 is the capacity case: the kernel's call must refuse it.
  DCP_CHECK(c.num_tokens >= 1 && c.num_tokens <= g.max_tokens + 1, UsageError,
            "{} tokens: must be in [1, max_tokens={}]", c.num_tokens, g.max_tokens);
  DCP_CHECK(c.out_dtype == DType::kFp16 || c.out_dtype == DType::kBf16, UsageError,
            "output dtype {} is not supported (fp16 or bf16)", to_string(c.out_dtype));
  CallShape sh;
  sh.num_tokens = c.num_tokens;
  sh.out_stride = c.out_token_stride();
  sh.lse_stride = c.lse_token_stride();
  sh.out = abi_dtype(c.out_dtype);
  sh.lse = abi_dtype(c.lse_dtype);
  sh.base_e = c.lse_base == LseBase::kE;
  sh.in_out_bytes = size_t{2} * c.num_tokens * sh.out_stride;
  sh.in_lse_bytes = elem_bytes(c.lse_dtype) * c.num_tokens * sh.lse_stride;
  sh.output_bytes = output_bytes(c);
  sh.lse_out_bytes = emits_combined_lse() ? combined_lse_bytes(c) : 0;
  sh.producer = c.producer;
  sh.reuse = c.reuse;
  sh.device_check = !batch.calls.empty() && batch.calls.front().device_check.has_value();
  sh.lse_stream = !batch.calls.empty() && batch.calls.front().lse_stream.has_value();
  if (sh.device_check || sh.lse_stream) sh.kinds_bytes = static_cast<size_t>(c.dcp_size) * c.num_tokens;
  if (sh.device_check) sh.check_rows = c.num_tokens * g.heads_per_rank;
  const bool masked = !batch.calls.empty() && !batch.calls.front().seq_lens.empty();
  int max_seqs = 0;
  for (const CallInputs& in : batch.calls) {
    DCP_CHECK(in.seq_lens.empty() != masked, HarnessError,
              "calls of one batch disagree on whether seq_lens is given");
    max_seqs = std::max(max_seqs, static_cast<int>(in.seq_lens.size()));
  }
  if (masked) sh.num_seq_slots = std::max(c.num_tokens, max_seqs);
  return sh;
}

// ---------------------------------------------------------------- per call

// A growth reallocates (cudaFree waits for the whole device, pinned memory is
// slow to allocate): sizes are rounded up to a power of two (at least 4 KiB)
// unless cfg_.exact_buffers, so shapes met later rarely grow a buffer again.
size_t GpuBackend::capacity(size_t bytes) const {
  if (cfg_.exact_buffers || bytes == 0) return bytes;
  size_t c = 4096;
  while (c < bytes) c *= 2;
  return c;
}

// The output region's: its output and LSE rounded, then its guards (an output
// of a power of two plus guards would otherwise double).
size_t GpuBackend::region_capacity(const CallShape& sh, const CallBuffers& b) const {
  const OutputRegion r = region_of(sh, b);
  return capacity(r.out_bytes + r.lse_bytes) + (r.total_bytes() - r.out_bytes - r.lse_bytes);
}

void GpuBackend::ensure(const CallShape& sh, CallBuffers& b, CallStaging& st) const {
  const int rank = cfg_.global_rank;
  const PackedInputs packed(sh);
  b.partial_output.ensure(capacity(sh.in_out_bytes), rank);
  b.partial_lse.ensure(capacity(sh.in_lse_bytes), rank);
  b.sequences.ensure(capacity(std::max(sh.seq_bytes(), 2 * sizeof(int32_t))), rank);
  b.output.ensure(region_capacity(sh, b), rank);
  b.packed.ensure(capacity(packed.total), rank);
  if (sh.producer != Producer::kDefault) {
    b.producer_params.ensure(sizeof(SlowProducerParams), rank);
    st.producer_params.ensure(sizeof(SlowProducerParams), rank);
  }
  st.packed.ensure(capacity(packed.total), rank);
  if (sh.device_check) {
    const size_t scratch =
        DeviceCheckScratch::bytes(sh.check_rows, sh.output_bytes, sh.lse_out_bytes);
    if (b.check_scratch.bytes() < scratch) {
      b.check_scratch.ensure(capacity(scratch), rank);
      b.check_zeroed = false;
    }
    st.check_result.ensure(sizeof(DeviceCheckResult), rank);
  }
  const size_t region = region_capacity(sh, b);
  if (st.output == nullptr) {
    st.output = output_pool_->take(region);
  } else {
    st.output->ensure(region, rank);
  }
}

// Copies one call's inputs into pinned staging (PackedInputs). Sequences are
// padded to num_seq_slots with empty ranges at the end (query_start_loc
// repeats its last entry, seq_lens 1): no token falls into them, so masking
// is unchanged. partial_output is either bytes (staged apart, copied) or
// streams (only their per-token flags are staged; the preparation kernel
// writes the values on the device).
void GpuBackend::stage(const CallShape& sh, const CallInputs& in, CallStaging& st) const {
  const size_t out_bytes =
      in.output_streams ? in.output_streams->token_normal.size() : in.partial_output.size();
  const size_t want_out = in.output_streams ? static_cast<size_t>(sh.num_tokens) : sh.in_out_bytes;
  const size_t want_lse = sh.lse_stream ? 0 : sh.in_lse_bytes;
  DCP_CHECK(out_bytes == want_out && in.partial_lse.size() == want_lse &&
                in.lse_stream.has_value() == sh.lse_stream,
            HarnessError, "call {}: inputs of {} and {} bytes, expected {} and {}", in.op_idx,
            out_bytes, in.partial_lse.size(), want_out, want_lse);
  DCP_CHECK(in.slot >= 0 && in.slot < kMaxSlots, HarnessError, "call {}: slot {} out of range",
            in.op_idx, in.slot);
  const PackedInputs packed(sh);
  auto* staged = static_cast<uint8_t*>(st.packed.data());
  if (in.output_streams) {
    std::memcpy(staged + packed.flags, in.output_streams->token_normal.data(), out_bytes);
  } else {
    st.partial_output.ensure(capacity(sh.in_out_bytes), cfg_.global_rank);
    std::memcpy(st.partial_output.data(), in.partial_output.data(), sh.in_out_bytes);
  }
  std::memcpy(staged + packed.lse, in.partial_lse.data(), want_lse);
  if (sh.kinds_bytes > 0) {
    DCP_CHECK(in.device_check.has_value() == sh.device_check &&
                  in.row_kinds.size() == sh.kinds_bytes,
              HarnessError, "call {}: {} row kinds, expected {}", in.op_idx, in.row_kinds.size(),
              sh.kinds_bytes);
    std::memcpy(staged + packed.kinds, in.row_kinds.data(), sh.kinds_bytes);
  }
  if (sh.num_seq_slots == 0) return;
  const size_t num_seqs = in.seq_lens.size();
  DCP_CHECK(in.query_start_loc.size() == num_seqs + 1, HarnessError,
            "call {}: {} seq_lens but {} query_start_loc entries", in.op_idx, num_seqs,
            in.query_start_loc.size());
  auto* lens = reinterpret_cast<int32_t*>(staged + packed.seqs);
  int32_t* qsl = lens + sh.num_seq_slots + 1;
  for (int s = 0; s < sh.num_seq_slots; ++s) {
    lens[s] = s < static_cast<int>(num_seqs) ? in.seq_lens[s] : 1;
  }
  for (int s = 0; s <= sh.num_seq_slots; ++s) {
    qsl[s] = in.query_start_loc[std::min<size_t>(s, num_seqs)];
  }
}

OpLaunch GpuBackend::make_launch(const CallShape& sh, int slot, const CallBuffers& b) const {
  OpLaunch op;
  std::memset(&op, 0, sizeof op);
  const bool masked = sh.num_seq_slots > 0;
  op.struct_size = sizeof op;
  op.slot = slot;
  op.num_tokens = sh.num_tokens;
  op.partial_output = b.partial_output.data();
  op.out_token_stride = sh.out_stride;
  op.out_dtype = sh.out;
  op.partial_lse = b.partial_lse.data();
  op.lse_token_stride = sh.lse_stride;
  op.lse_dtype = sh.lse;
  op.lse_base = sh.base_e ? DCP_LSE_BASE_E : DCP_LSE_BASE_2;
  if (masked) {
    op.seq_lens = static_cast<const int32_t*>(b.sequences.data());
    op.query_start_loc = op.seq_lens + sh.num_seq_slots + 1;
    op.num_seqs = sh.num_seq_slots;
  }
  op.output = output_of(b);
  if (sh.lse_out_bytes > 0) op.combined_lse = reinterpret_cast<float*>(lse_of(sh, b));
  op.timeout_ns = static_cast<uint64_t>(std::max(1e-3, cfg_.spin_timeout_s) * 1e9);
  if (sh.producer == Producer::kSlowPdl) op.flags = DCP_CALL_PDL;
  return op;
}

void GpuBackend::enqueue_op(const OpLaunch& op, cudaStream_t s, int ctx) {
  DCP_CHECK(ctx >= 0 && ctx < kMaxContexts && contexts_[static_cast<size_t>(ctx)].instance,
            HarnessError, "call on kernel context {}, which this rank has not created", ctx);
  OpLaunch args = op;
  args.stream = s;
  contexts_[static_cast<size_t>(ctx)].instance->call(args);
}

// The call's inputs: partial_output's bytes when staged as bytes, the packed
// sources, then the preparation kernel (call_prep.h), which also fills the
// output region. With a slow producer both inputs are poisoned instead (0xFF:
// NaN in every dtype), so an op that reads before the producer wrote reads poison.
void GpuBackend::enqueue_inputs(const CallShape& sh, const CallInputs& in, CallStaging& st,
                                CallBuffers& b, cudaStream_t s) {
  const PackedInputs packed(sh);
  if (!in.output_streams) {
    check(cudaMemcpyAsync(b.partial_output.data(), st.partial_output.data(), sh.in_out_bytes,
                          cudaMemcpyHostToDevice, s),
          "copy partial_output in", false);
  }
  check(cudaMemcpyAsync(b.packed.data(), st.packed.data(), packed.total, cudaMemcpyHostToDevice, s),
        "copy token flags, LSE and sequences in", false);
  const auto* sources = static_cast<const uint8_t*>(b.packed.data());
  CallPrep p;
  if (in.output_streams) {
    p.recipe = in.output_streams->recipe(*current_, sources + packed.flags);
    p.recipe.table = value_table_.bits;
    p.partial_output = static_cast<uint16_t*>(b.partial_output.data());
  }
  p.poison_inputs = sh.producer != Producer::kDefault;
  p.lse_src = sources + packed.lse;
  if (sh.lse_stream) {
    p.lse_from_stream = true;
    p.lse_stream = *in.lse_stream;
    p.lse_stream.kinds = sources + packed.kinds + static_cast<size_t>(in.lse_stream->src) * sh.num_tokens;
  }
  p.partial_lse = static_cast<uint8_t*>(b.partial_lse.data());
  p.lse_bytes = sh.in_lse_bytes;
  p.seq_src = sources + packed.seqs;
  p.sequences = static_cast<uint8_t*>(b.sequences.data());
  p.seq_bytes = sh.seq_bytes();
  p.region = region_of(sh, b);
  p.canary = kGuardCanary;
  for (int i = step_twice() == TwiceStep::kPrep ? 2 : 1; i > 0; --i) {
    check(launch_call_prep(p, s), "prepare inputs, poison output, fill guards", false);
  }
}

// The slow producer's parameters; it reads the token flags and the LSE bytes
// from the packed sources, which enqueue_inputs copies in next.
void GpuBackend::enqueue_producer_params(const CallShape& sh, const CallInputs& in,
                                         CallStaging& st, CallBuffers& b, cudaStream_t s) {
  DCP_CHECK(in.output_streams.has_value(), HarnessError,
            "call {}: a slow producer needs the output's streams", in.op_idx);
  const PackedInputs packed(sh);
  const auto* sources = static_cast<const uint8_t*>(b.packed.data());
  SlowProducerParams p{};
  p.recipe = in.output_streams->recipe(*current_, sources + packed.flags);
  p.recipe.table = value_table_.bits;
  p.partial_output = static_cast<uint16_t*>(b.partial_output.data());
  p.lse_src = sources + packed.lse;
  p.partial_lse = static_cast<uint8_t*>(b.partial_lse.data());
  p.lse_row_bytes = static_cast<int64_t>(sh.in_lse_bytes / sh.num_tokens);
  p.delay_ns = kSlowProducerDelayNs;
  std::memcpy(st.producer_params.data(), &p, sizeof p);
  check(cudaMemcpyAsync(b.producer_params.data(), st.producer_params.data(), sizeof p,
                        cudaMemcpyHostToDevice, s),
        "copy producer parameters in", false);
}

void GpuBackend::launch_producer(const CallShape& sh, const CallBuffers& b, cudaStream_t s) {
  check(launch_slow_input_producer(static_cast<const SlowProducerParams*>(b.producer_params.data()),
                                   sh.num_tokens, sh.out_stride,
                                   sh.producer == Producer::kSlowPdl, s),
        "slow producer", false);
}

void GpuBackend::enqueue_call(const CallShape& sh, const CallInputs& in, CallStaging& st,
                              CallBuffers& b, cudaStream_t s, cudaGraphExec_t graph,
                              PhaseTimes* phases) {
  PhaseClock clock;
  const launch_observer::OpScope op_scope(in.op_idx, in.slot, cfg_.dcp_size);
  StepTrace trace(cfg_.global_rank, s);
  stage(sh, in, st);
  if (phases != nullptr) clock.lap(phases->stage_ms);
  trace.mark("stage");
  const bool slow = sh.producer != Producer::kDefault;
  if (slow) enqueue_producer_params(sh, in, st, b, s);
  enqueue_inputs(sh, in, st, b, s);
  trace.mark("inputs, poison and guards");
  check(launch_delay(in.skew_ns, s), "skew delay", false);
  trace.mark("skew delay");
  if (graph != nullptr) {
    check(cudaGraphLaunch(graph, s), "graph replay", true);  // holds the slow producer too
  } else {
    if (slow) launch_producer(sh, b, s);
    enqueue_op(make_launch(sh, in.slot, b), s, in.context);
  }
  trace.mark("op");
  if (sh.reuse) {
    // The caller reuses the inputs at once (issue 15 item 7): stream-ordered
    // after the op (or its replay), before the peers' combines need have ended.
    check(cudaMemsetAsync(b.partial_output.data(), 0xFF, sh.in_out_bytes, s),
          "overwrite partial_output after the call", false);
    check(cudaMemsetAsync(b.partial_lse.data(), 0xFF, sh.in_lse_bytes, s),
          "overwrite partial_lse after the call", false);
    trace.mark("input reuse");
  }
  // A memory-stress case's stress covers the op, not the check after it.
  if (current_ != nullptr && current_->mstress && mstress_ != nullptr) mstress_->release(s);
  const OutputRegion region = region_of(sh, b);
  if (sh.device_check) {
    DeviceCheckParams p = *in.device_check;
    p.output = output_of(b);
    p.combined_lse = sh.lse_out_bytes > 0 ? reinterpret_cast<const float*>(lse_of(sh, b)) : nullptr;
    p.row_kinds = static_cast<const uint8_t*>(b.packed.data()) + PackedInputs(sh).kinds;
    p.table = value_table_.bits;
    const launch_observer::Unobserved ours;
    auto* result = static_cast<DeviceCheckResult*>(st.check_result.data());
    result->written = 0;  // collect refuses a result this check did not write
    bool zeroed = b.check_zeroed;
    for (int i = step_twice() == TwiceStep::kCheck ? 2 : 1; i > 0; --i) {
      check(launch_device_check(p, region, kGuardCanary, b.check_scratch.data(),
                                b.check_scratch.bytes(), zeroed, result, s),
            "device check", false);
      zeroed = true;  // a second check (stream-ordered) finds the scratch the first left zero
    }
    b.check_zeroed = false;  // until the check is seen complete (collect)
    trace.mark("device check");
  }
  if (!sh.device_check || in.copy_output) {
    check(cudaMemcpyAsync(st.output->data(), region.base, region.total_bytes(),
                          cudaMemcpyDeviceToHost, s),
          "copy output region out", false);
    trace.mark("copies out");
  }
}

// The op, after the slow producer when the case has one (its parameters are
// read from g.buffers, refilled before each replay).
void GpuBackend::capture(SlotGraph& g, const CallShape& sh, const OpLaunch& op, cudaStream_t s,
                         int ctx) {
  g.exec.reset();
  g.valid = false;
  g.exec.reset(capture_graph(s, [&] {
    if (sh.producer != Producer::kDefault) launch_producer(sh, g.buffers, s);
    enqueue_op(op, s, ctx);
  }));
  g.key = op;
  g.producer = sh.producer;
  g.valid = true;
}

cudaGraphExec_t GpuBackend::capture_graph(cudaStream_t s, const std::function<void()>& enqueue) {
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture", false);
  cudaGraph_t graph = nullptr;
  try {
    enqueue();
  } catch (...) {
    cudaStreamEndCapture(s, &graph);  // leave the stream usable, then report
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  check(cudaStreamEndCapture(s, &graph), "end capture", true);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check(err, "instantiate graph", true);
  return exec;
}

// A key compares equal only when the shape and the buffers are those of the
// capture, so a cached graph's buffers already fit `sh`; the producer kind
// must match too (a slow producer is captured ahead of the op).
SlotGraph& GpuBackend::graph_for(const CallShape& sh, int ctx, int slot, CallStaging& st,
                                 bool* cached) {
  DCP_CHECK(ctx >= 0 && ctx < kMaxContexts, HarnessError, "kernel context {} out of range", ctx);
  auto& graphs = graphs_[static_cast<size_t>(ctx)][static_cast<size_t>(slot)];
  SlotGraph* victim = &graphs[0];
  for (SlotGraph& g : graphs) {
    if (g.valid) {
      const OpLaunch op = make_launch(sh, slot, g.buffers);
      if (std::memcmp(&op, &g.key, sizeof op) == 0 && g.producer == sh.producer) {
        ensure(sh, g.buffers, st);  // the staging; the buffers already fit
        *cached = true;
        return g;
      }
    }
    if (victim->valid && (!g.valid || g.last_use < victim->last_use)) victim = &g;
  }
  victim->exec.reset();
  victim->valid = false;
  ensure(sh, victim->buffers, st);
  *cached = false;
  return *victim;
}

}  // namespace dcp::gpu_backend_detail
