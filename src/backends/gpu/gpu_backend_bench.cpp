// The op alone on the GPU backend: graph-replayed and timed (dcp-check bench;
// gpu_backend_impl.h).
#include "gpu_backend_impl.h"

namespace dcp::gpu_backend_detail {

std::vector<double> GpuBackend::bench(const Case& c, const Batch& batch, const BenchTiming& timing,
                                      const std::function<void()>& barrier) {
  const int rank = cfg_.global_rank;
  CUDA_CHECK(rank, HarnessError, cudaSetDevice(cfg_.device));
  DCP_CHECK(!batch.calls.empty() && timing.repeats >= 1 && timing.replays >= 1, HarnessError,
            "bench needs at least one call, repeat and replay");
  current_ = &c;
  const CallShape sh = shape_of(c, batch);
  const size_t k = batch.calls.size();
  const cudaStream_t s = stream_for(0);
  // One buffer set per op, so K ops read K distinct inputs (caches do not flatter).
  std::vector<CallBuffers> bufs(k);
  std::vector<CallStaging> st(k);
  for (size_t i = 0; i < k; ++i) {
    ensure(sh, bufs[i], st[i]);
    stage(sh, batch.calls[i], st[i]);
    enqueue_inputs(sh, batch.calls[i], st[i], bufs[i], s);
  }
  sync_all();
  // Declared after the buffers: destroyed first.
  GraphExec exec;
  exec.reset(capture_graph(s, [&] {
    for (size_t i = 0; i < k; ++i) enqueue_op(make_launch(sh, 0, bufs[i]), s, 0);
  }));
  barrier();
  for (int w = 0; w < timing.warmup; ++w) check(cudaGraphLaunch(exec.get(), s), "warm-up", true);
  sync_all();
  Event start, stop;
  start.create(rank, cudaEventDefault);
  stop.create(rank, cudaEventDefault);
  std::vector<double> per_op_us;
  for (int rep = 0; rep < timing.repeats; ++rep) {
    barrier();  // every rank's stream is idle here: the repeat starts together
    check(cudaEventRecord(start.get(), s), "record start", false);
    for (int r = 0; r < timing.replays; ++r) check(cudaGraphLaunch(exec.get(), s), "replay", true);
    check(cudaEventRecord(stop.get(), s), "record stop", false);
    sync_all();
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.get(), stop.get()), "event elapsed", false);
    per_op_us.push_back(1e3 * ms / (static_cast<double>(timing.replays) * k));
  }
  current_ = nullptr;
  return per_op_us;
}

}  // namespace dcp::gpu_backend_detail
