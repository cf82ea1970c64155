// A batch of calls on the GPU backend, per mode, and what surrounds it: the
// verdicts and outputs collected, SM pressure, memory stress, the guards
// (gpu_backend_impl.h).
#include "gpu_backend_impl.h"

namespace dcp::gpu_backend_detail {

// A trap that surfaced at one of our own CUDA calls (CUDA_CHECK) is still the
// kernel's, with the device's wait diagnosis.
std::vector<CallOutput> GpuBackend::run_batch(const Case& c, const Batch& batch) {
  try {
    return run_batch_checked(c, batch);
  } catch (const StickyDeviceFault& e) {
    throw KernelFault(fmt::format("{} (in case {}); {}", e.what(), format_case_id(c), status_text()),
                      FailureKind::kTrap);
  }
}

std::vector<CallOutput> GpuBackend::run_batch_checked(const Case& c, const Batch& batch) {
  PhaseClock setup_clock;  // laps PhaseTimes::setup_ms: the work before and between the calls
  CUDA_CHECK(cfg_.global_rank, HarnessError, cudaSetDevice(cfg_.device));
  DCP_CHECK(batch.mode != ExecMode::kMixed && batch.mode != ExecMode::kGraphSet, HarnessError,
            "a batch is never mixed or a graph set (plan_case splits them)");
  current_ = &c;
  const CallShape sh = shape_of(c, batch);
  const size_t n = batch.calls.size();
  if (staging_.size() < std::max<size_t>(n, 1)) staging_.resize(std::max<size_t>(n, 1));
  std::vector<CallOutput> outputs;
  outputs.reserve(n);
  PhaseTimes unused;
  PhaseTimes& phases = batch.phases != nullptr ? *batch.phases : unused;
  // The region as copied out goes to the check whole, with no copy: the
  // output, then the combined LSE past the guard between them.
  // Checked on the device: the verdict, and the region only when it was
  // copied or the verdict asks for it (a mismatch or a damaged guard: the
  // CPU checker then re-checks and explains), which needs the call's buffers
  // intact (`recopy`: no later call of the batch replayed into them).
  auto collect = [&](CallStaging& st, const CallInputs& in, CallBuffers& b, bool recopy = true) {
    PhaseClock clock;
    std::optional<DeviceCheckResult> verdict;
    bool copied = !sh.device_check || in.copy_output;
    if (sh.device_check) {
      verdict = *static_cast<const DeviceCheckResult*>(st.check_result.data());
      DCP_CHECK(verdict->written == 1, HarnessError,
                "call {}: the device check completed without writing its result", in.op_idx);
      b.check_zeroed = true;  // the check completed: its last block zeroed the scratch
      // Test only: DCP_TEST_CHECKER_DISAGREE=1 skews the device's digest, so
      // every audited call disagrees (ci/gpu.sh check: exit 3).
      static const bool skew = [] {
        const char* e = std::getenv("DCP_TEST_CHECKER_DISAGREE");
        return e != nullptr && std::string(e) == "1";
      }();
      if (skew) verdict->digest ^= 1;
      const bool found = verdict->num_mismatches > 0 || verdict->guard_damaged != 0;
      if (!copied && recopy && found) {
        check(cudaMemcpy(st.output->data(), b.output.data(), region_of(sh, b).total_bytes(),
                         cudaMemcpyDeviceToHost),
              "copy output region out", false);
        copied = true;
      }
      if (!copied && verdict->guard_damaged != 0 && batch.out_of_bounds != nullptr) {
        batch.out_of_bounds->push_back(fmt::format(
            "call {}: a guard zone of the output region was overwritten (found by the device "
            "checker; the graph's buffers were replayed into again before they could be copied)",
            in.op_idx));
      }
    }
    if (copied) {
      check_guards(sh, in, st, batch.out_of_bounds);
      std::shared_ptr<PinnedBuffer> region = std::move(st.output);
      auto* bytes = static_cast<uint8_t*>(region->data());
      const std::span<uint8_t> out(bytes + guard_, sh.output_bytes);
      const std::span<uint8_t> lse(bytes + 2 * guard_ + sh.output_bytes, sh.lse_out_bytes);
      outputs.emplace_back(std::move(region), out, lse);
    } else {
      outputs.emplace_back();  // the staging keeps its lease for the next call
    }
    if (verdict) outputs.back().set_device_verdict(*verdict);
    clock.lap(phases.collect_ms);
  };
  tails_pending_ = false;
  auto wait = [&](bool last) {  // last: the batch's last wait, its tails copied first
    PhaseClock clock;
    if (last) enqueue_region_tails();
    sync_all();
    clock.lap(phases.wait_ms);
  };
  if (c.pressure > 0) start_pressure(c, sh, batch);
  const PressureScope pressure_scope(c.pressure > 0 ? pressure_.get() : nullptr);
  setup_clock.lap(phases.setup_ms);
  if (batch.mode == ExecMode::kEager) {
    for (const CallInputs& in : batch.calls) {
      setup_clock.restart();
      ensure(sh, eager_buffers_, staging_[0]);
      kick_memory_stress(c, 1);
      setup_clock.lap(phases.setup_ms);
      enqueue_call(sh, in, staging_[0], eager_buffers_, stream_for(in.slot), nullptr, &phases);
      wait(&in == &batch.calls.back());
      collect(staging_[0], in, eager_buffers_);
    }
  } else if (batch.mode == ExecMode::kPipelined) {
    if (pipe_buffers_.size() < n) pipe_buffers_.resize(n);
    setup_clock.restart();
    for (size_t i = 0; i < n; ++i) ensure(sh, pipe_buffers_[i], staging_[i]);
    kick_memory_stress(c, static_cast<int>(n));
    setup_clock.lap(phases.setup_ms);
    for (size_t i = 0; i < n; ++i) {
      enqueue_call(sh, batch.calls[i], staging_[i], pipe_buffers_[i],
                   stream_for(batch.calls[i].slot), nullptr, &phases);
    }
    wait(true);
    for (size_t i = 0; i < n; ++i) collect(staging_[i], batch.calls[i], pipe_buffers_[i]);
  } else {
    std::vector<CallBuffers*> used(n);
    for (size_t i = 0; i < n; ++i) {
      const CallInputs& in = batch.calls[i];
      DCP_CHECK(in.slot >= 0 && in.slot < kMaxSlots, HarnessError, "slot {} out of range", in.slot);
      const cudaStream_t s = stream_for(in.slot);
      bool cached = false;
      setup_clock.restart();
      SlotGraph& g = graph_for(sh, in.context, in.slot, staging_[i], &cached);
      setup_clock.lap(phases.setup_ms);
      bool& warmed = warmed_[static_cast<size_t>(in.context)][static_cast<size_t>(in.slot)];
      if (!cached) {
        if (!warmed && cfg_.kernel->info().has(DCP_CAP_EAGER_BEFORE_CAPTURE)) {
          // Every rank runs the case's calls in the same order, so this extra
          // call (its output discarded) lines up across the group too.
          enqueue_call(sh, in, staging_[i], g.buffers, s, nullptr, &phases);
          wait(false);
        }
        PhaseClock clock;
        capture(g, sh, make_launch(sh, in.slot, g.buffers), s, in.context);
        if (c.churn) churn_after_capture(sh, s);
        clock.lap(phases.capture_ms);
      }
      warmed = true;
      g.last_use = ++graph_uses_;
      enqueue_call(sh, in, staging_[i], g.buffers, s, g.exec.get(), &phases);
      used[i] = &g.buffers;
    }
    wait(true);
    for (size_t i = 0; i < n; ++i) {
      const bool reused = std::find(used.begin() + static_cast<std::ptrdiff_t>(i) + 1, used.end(),
                                    used[i]) != used.end();
      collect(staging_[i], batch.calls[i], *used[i], !reused);
    }
  }
  PhaseClock after_clock;
  if (pressure_ != nullptr) pressure_->stop();
  check_region_tails(batch.out_of_bounds);
  check_churn(batch.out_of_bounds);
  after_clock.lap(phases.after_ms);
  current_ = nullptr;
  return outputs;
}

void GpuBackend::kick_memory_stress(const Case& c, int calls) {
  if (!c.mstress) return;
  DCP_CHECK(pressure_allowed(c.mode), HarnessError,
            "memory stress needs eager or pipelined batches, not {}", to_string(c.mode));
  if (mstress_ == nullptr) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, cfg_.device), "cudaGetDeviceProperties", false);
    mstress_ = std::make_unique<MemoryStress>(
        cfg_.device, cfg_.global_rank, memory_stress_for(prop.name, memory_stress_cache_path()));
    spdlog::debug("rank {}: {}", cfg_.global_rank, mstress_->note());
  }
  mstress_->kick(calls);
}

// SM pressure (Case::pressure): every buffer of the batch is sized first, since
// a reallocation (cudaFree) would wait for the pressure kernel; then the
// pressure kernel takes its SMs before the first call.
void GpuBackend::start_pressure(const Case& c, const CallShape& sh, const Batch& batch) {
  DCP_CHECK(pressure_allowed(batch.mode), HarnessError,
            "SM pressure needs eager or pipelined batches, not {}", to_string(batch.mode));
  if (batch.mode == ExecMode::kEager) {
    ensure(sh, eager_buffers_, staging_[0]);
  } else {
    if (pipe_buffers_.size() < batch.calls.size()) pipe_buffers_.resize(batch.calls.size());
    for (size_t i = 0; i < batch.calls.size(); ++i) ensure(sh, pipe_buffers_[i], staging_[i]);
  }
  if (pressure_ == nullptr) {
    pressure_ = std::make_unique<SmPressure>(cfg_.device, cfg_.global_rank, cfg_.spin_timeout_s);
  }
  // Before the pressure, one call (output discarded) for each kernel context
  // and variant (dtypes, producer) of the batch that no pressure batch has
  // seen: a kernel's first launches in a process may wait for every running
  // kernel (measured: the built-in's first op under pressure waited for the
  // pressure's whole bound). Every rank runs the same cases, so these extra
  // calls line up across the group (as eager-before-capture's do).
  CallBuffers& b = batch.mode == ExecMode::kEager ? eager_buffers_ : pipe_buffers_[0];
  for (const CallInputs& in : batch.calls) {
    const auto variant = std::make_tuple(in.context, static_cast<int>(sh.out),
                                         static_cast<int>(sh.lse), static_cast<int>(sh.producer));
    if (!pressure_warmed_.insert(variant).second) continue;
    enqueue_call(sh, in, staging_[0], b, stream_for(in.slot), nullptr, nullptr);
    sync_all();
  }
  sync_all();  // the buffers' first fills are done before the SMs are taken
  spdlog::debug("rank {}: {}", cfg_.global_rank, pressure_->start(c.pressure));
}

// Guard zones (guard_zone.h): the output's two guards came back with the
// output; a damaged one is reported and refilled before the next call anyway.
void GpuBackend::check_guards(const CallShape& sh, const CallInputs& in, const CallStaging& st,
                              std::vector<std::string>* out) const {
  const auto* g = static_cast<const uint8_t*>(st.output->data());  // the region, as copied out
  const uint8_t* after = g + guard_ + sh.output_bytes;
  std::string damage = describe_guard_damage("output", g, after, guard_);
  if (damage.empty() && sh.lse_out_bytes > 0) {
    damage = describe_guard_damage("combined_lse", nullptr, after + guard_ + sh.lse_out_bytes,
                                   guard_);
  }
  if (!damage.empty() && out != nullptr) out->push_back(fmt::format("call {}: {}", in.op_idx, damage));
}

// The tail past each payload region on this rank (peers write into it):
// compared after every batch, refilled when damaged.
size_t GpuBackend::region_tails_bytes() const {
  size_t total = 0;
  for (const KernelContext& k : contexts_) {
    for (const MappedRegion& m : k.regions) total += m.tail_guard;
  }
  return total;
}

void GpuBackend::enqueue_region_tails() {
  const size_t total = region_tails_bytes();
  if (total == 0) return;
  DCP_CHECK(total <= tails_host_.bytes(), HarnessError,
            "region tails of {} bytes, {} pinned for them", total, tails_host_.bytes());
  const cudaStream_t s0 = streams_[0].get();
  for (size_t i = 1; i < streams_.size(); ++i) {
    check(cudaEventRecord(joins_[i].get(), streams_[i].get()), "record a stream's work", false);
    check(cudaStreamWaitEvent(s0, joins_[i].get(), 0), "order the region tails' copy", false);
  }
  auto* to = static_cast<uint8_t*>(tails_host_.data());
  for (const KernelContext& k : contexts_) {
    for (const MappedRegion& m : k.regions) {
      if (m.tail_guard == 0) continue;
      const auto* tail = static_cast<const uint8_t*>(m.peers[cfg_.group_rank]) + m.request.bytes;
      check(cudaMemcpyAsync(to, tail, m.tail_guard, cudaMemcpyDeviceToHost, s0),
            "copy region tail", false);
      to += m.tail_guard;
    }
  }
  tails_pending_ = true;
}

void GpuBackend::check_region_tails(std::vector<std::string>* out) {
  if (!tails_pending_) {
    enqueue_region_tails();
    if (!tails_pending_) return;  // no payload region
    check(cudaStreamSynchronize(streams_[0].get()), "copy region tails", false);
  }
  tails_pending_ = false;
  const auto* from = static_cast<const uint8_t*>(tails_host_.data());
  bool refilled = false;
  for (const KernelContext& k : contexts_) {
    for (const MappedRegion& m : k.regions) {
      if (m.tail_guard == 0) continue;
      const std::string damage = describe_guard_damage(m.request.name, nullptr, from, m.tail_guard);
      from += m.tail_guard;
      if (damage.empty()) continue;
      if (out != nullptr) out->push_back(fmt::format("after the batch: {}", damage));
      uint8_t* tail = static_cast<uint8_t*>(m.peers[cfg_.group_rank]) + m.request.bytes;
      check(cudaMemsetAsync(tail, kGuardCanary, m.tail_guard, streams_[0].get()),
            "refill region tail", false);
      refilled = true;
    }
  }
  // On stream 0, waited for: the next batch's copy of the tails follows them.
  if (refilled) check(cudaStreamSynchronize(streams_[0].get()), "refill region tails", false);
}

// Allocation churn (alloc_churn.h), on the call's stream right after a capture.
void GpuBackend::churn_after_capture(const CallShape& sh, cudaStream_t s) {
  check(churn_.after_capture(sh.in_out_bytes + sh.in_lse_bytes + sh.output_bytes +
                                 sh.lse_out_bytes,
                             s),
        "allocate churn blocks", false);
}

// After each batch of a churn case: every live churn block still holds the canary.
void GpuBackend::check_churn(std::vector<std::string>* out) {
  if (churn_.empty()) return;
  check(churn_.damage(streams_[0].get(), out), "check churn blocks", false);
}

}  // namespace dcp::gpu_backend_detail
