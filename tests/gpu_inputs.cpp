// gpu_inputs: the GPU's call preparation (call_prep.h) writes exactly the
// bytes of the host generator (generate_source_inputs), for random cases of
// every dtype, empty pattern, special value and padding, copies the LSE and
// sequences from the packed sources and fills the output region (or poisons
// both inputs); so does the slow producer (both inputs, over poison, with and
// without the early PDL trigger). Exit 77 (skipped, by
// name) without a GPU.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "generator.h"
#include "geometry.h"
#include "gpu_test_prologue.h"
#include "call_prep.h"
#include "device_value_table.h"
#include "input_producer.h"
#include "random_case.h"

namespace {

using dcp::Case;

// What one preparation kernel (call_prep.h) wrote.
struct Prepared {
  std::vector<uint8_t> out, lse, seqs, region;
};

constexpr uint8_t kCanary = 0xA5;
// The device value table (device_value_table.h), filled once in main: the
// preparation reads it as the backend's does; the slow producer evaluates the
// formula per element (no table), so both ways are held to the host's bytes.
dcp::DeviceValueTable g_table;
constexpr size_t kGuard = 64, kRegionOut = 256, kRegionLse = 32;

// The preparation of `streams` (with `tweak` added to the row key), `lse` and
// `seqs` copied from one packed device buffer, and a small output region.
bool prepare(const Case& c, const dcp::OutputStreams& streams, uint64_t tweak,
             const std::vector<uint8_t>& lse, const std::vector<uint8_t>& seqs, bool poison,
             Prepared& got) {
  const size_t bytes = 2 * static_cast<size_t>(c.num_tokens) * c.out_token_stride();
  const size_t flags_at = 0, lse_at = (streams.token_normal.size() + 15) / 16 * 16,
               seqs_at = lse_at + (lse.size() + 15) / 16 * 16;
  std::vector<uint8_t> packed(seqs_at + seqs.size());
  std::memcpy(packed.data() + flags_at, streams.token_normal.data(), streams.token_normal.size());
  std::memcpy(packed.data() + lse_at, lse.data(), lse.size());
  std::memcpy(packed.data() + seqs_at, seqs.data(), seqs.size());
  dcp::OutputRegion region;
  region.guard_bytes = kGuard;
  region.out_bytes = kRegionOut;
  region.lse_bytes = kRegionLse;
  void *dev_out = nullptr, *dev_packed = nullptr, *dev_lse = nullptr, *dev_seqs = nullptr;
  bool ok = cudaMalloc(&dev_out, bytes) == cudaSuccess &&
            cudaMalloc(&dev_packed, packed.size()) == cudaSuccess &&
            cudaMalloc(&dev_lse, lse.size()) == cudaSuccess &&
            cudaMalloc(&dev_seqs, seqs.size() + 1) == cudaSuccess &&
            cudaMalloc(&region.base, region.total_bytes()) == cudaSuccess &&
            cudaMemset(dev_out, 0, bytes) == cudaSuccess &&
            cudaMemset(dev_lse, 0, lse.size()) == cudaSuccess &&
            cudaMemset(region.base, 0, region.total_bytes()) == cudaSuccess &&
            cudaMemcpy(dev_packed, packed.data(), packed.size(), cudaMemcpyHostToDevice) ==
                cudaSuccess;
  if (ok) {
    const auto* sources = static_cast<const uint8_t*>(dev_packed);
    dcp::CallPrep p;
    p.recipe = streams.recipe(c, sources + flags_at);
    p.recipe.row_key += tweak;
    p.recipe.table = g_table.bits;
    p.partial_output = static_cast<uint16_t*>(dev_out);
    p.poison_inputs = poison;
    p.lse_src = sources + lse_at;
    p.partial_lse = static_cast<uint8_t*>(dev_lse);
    p.lse_bytes = lse.size();
    p.seq_src = sources + seqs_at;
    p.sequences = static_cast<uint8_t*>(dev_seqs);
    p.seq_bytes = seqs.size();
    p.region = region;
    p.canary = kCanary;
    got.out.resize(bytes);
    got.lse.resize(lse.size());
    got.seqs.resize(seqs.size());
    got.region.resize(region.total_bytes());
    ok = dcp::launch_call_prep(p, nullptr) == cudaSuccess &&
         cudaMemcpy(got.out.data(), dev_out, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
         cudaMemcpy(got.lse.data(), dev_lse, lse.size(), cudaMemcpyDeviceToHost) == cudaSuccess &&
         cudaMemcpy(got.seqs.data(), dev_seqs, seqs.size(), cudaMemcpyDeviceToHost) ==
             cudaSuccess &&
         cudaMemcpy(got.region.data(), region.base, region.total_bytes(),
                    cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  for (void* ptr : {dev_out, dev_packed, dev_lse, dev_seqs, region.base}) cudaFree(ptr);
  return ok;
}

// The region as the preparation must leave it: canary guards, poison elsewhere.
bool region_filled(const std::vector<uint8_t>& region) {
  for (size_t i = 0; i < region.size(); ++i) {
    const bool guard = i < kGuard || (i >= kGuard + kRegionOut && i < 2 * kGuard + kRegionOut) ||
                       i >= 2 * kGuard + kRegionOut + kRegionLse;
    if (region[i] != (guard ? kCanary : 0xFF)) return false;
  }
  return true;
}

bool all_ff(const std::vector<uint8_t>& v) {
  for (uint8_t b : v) {
    if (b != 0xFF) return false;
  }
  return true;
}

// The slow producer's partial_output and partial_lse, written over 0xFF.
bool produce_slow(const Case& c, const dcp::OutputStreams& streams,
                  const std::vector<uint8_t>& lse, bool pdl, std::vector<uint8_t>& out,
                  std::vector<uint8_t>& lse_out) {
  const size_t bytes = 2 * static_cast<size_t>(c.num_tokens) * c.out_token_stride();
  void *dev_out = nullptr, *dev_flags = nullptr, *dev_lse_src = nullptr, *dev_lse = nullptr,
       *dev_params = nullptr;
  bool ok = cudaMalloc(&dev_out, bytes) == cudaSuccess &&
            cudaMalloc(&dev_flags, streams.token_normal.size()) == cudaSuccess &&
            cudaMalloc(&dev_lse_src, lse.size()) == cudaSuccess &&
            cudaMalloc(&dev_lse, lse.size()) == cudaSuccess &&
            cudaMalloc(&dev_params, sizeof(dcp::SlowProducerParams)) == cudaSuccess &&
            cudaMemset(dev_out, 0xFF, bytes) == cudaSuccess &&
            cudaMemset(dev_lse, 0xFF, lse.size()) == cudaSuccess &&
            cudaMemcpy(dev_flags, streams.token_normal.data(), streams.token_normal.size(),
                       cudaMemcpyHostToDevice) == cudaSuccess &&
            cudaMemcpy(dev_lse_src, lse.data(), lse.size(), cudaMemcpyHostToDevice) == cudaSuccess;
  if (ok) {
    dcp::SlowProducerParams p{};
    p.recipe = streams.recipe(c, static_cast<const uint8_t*>(dev_flags));
    p.partial_output = static_cast<uint16_t*>(dev_out);
    p.lse_src = static_cast<const uint8_t*>(dev_lse_src);
    p.partial_lse = static_cast<uint8_t*>(dev_lse);
    p.lse_row_bytes = static_cast<int64_t>(lse.size()) / c.num_tokens;
    p.delay_ns = 2000;
    out.resize(bytes);
    lse_out.resize(lse.size());
    ok = cudaMemcpy(dev_params, &p, sizeof p, cudaMemcpyHostToDevice) == cudaSuccess &&
         dcp::launch_slow_input_producer(static_cast<const dcp::SlowProducerParams*>(dev_params),
                                         c.num_tokens, c.out_token_stride(), pdl,
                                         nullptr) == cudaSuccess &&
         cudaMemcpy(out.data(), dev_out, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
         cudaMemcpy(lse_out.data(), dev_lse, lse.size(), cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  for (void* ptr : {dev_out, dev_flags, dev_lse_src, dev_lse, dev_params}) cudaFree(ptr);
  return ok;
}

}  // namespace

int main() {
  if (dcp::skip_without_gpu("gpu_inputs")) return 77;
  if (!dcp::make_device_value_table("gpu_inputs", &g_table)) return 1;
  int64_t compared = 0;
  for (uint64_t i = 0; i < 60; ++i) {
    Case c = dcp::random_case(0x1a9, i, 8, *dcp::find_geometry(i % 3 == 0 ? "kimi" : "tiny"));
    if (i == 0) c.num_tokens = c.geometry.max_tokens;  // the largest buffer
    const int group = static_cast<int>(i % 2), op = static_cast<int>(i % 7);
    const dcp::OpGenerator gen(c, group, op);
    for (int src = 0; src < c.dcp_size; ++src) {
      const dcp::SourceInputs inputs = dcp::generate_source_inputs(c, group, op, src);
      const std::vector<uint8_t>& host = inputs.partial_output;
      const dcp::OutputStreams streams = dcp::output_streams(gen, c, src);
      std::vector<uint8_t> seqs(4 * (2 * static_cast<size_t>(src) + 3));
      for (size_t k = 0; k < seqs.size(); ++k) seqs[k] = static_cast<uint8_t>(k * 7 + i);
      Prepared got;
      if (!prepare(c, streams, 0, inputs.partial_lse, seqs, false, got)) {
        std::printf("FAIL: gpu_inputs: CUDA error: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 1;
      }
      const std::vector<uint8_t>& device = got.out;
      if (device != host) {
        size_t at = 0;
        while (device[at] == host[at]) ++at;
        std::printf("FAIL: gpu_inputs: case %s source %d: byte %zu is 0x%02x on the device, "
                    "0x%02x on the host\n",
                    dcp::format_case_id(c).c_str(), src, at, device[at], host[at]);
        return 1;
      }
      if (got.lse != inputs.partial_lse || got.seqs != seqs || !region_filled(got.region)) {
        std::printf("FAIL: gpu_inputs: case %s source %d: the preparation's %s is wrong\n",
                    dcp::format_case_id(c).c_str(), src,
                    got.lse != inputs.partial_lse ? "partial_lse"
                    : got.seqs != seqs           ? "sequences"
                                                 : "output region");
        return 1;
      }
      Prepared poisoned;
      if (!prepare(c, streams, 0, inputs.partial_lse, seqs, true, poisoned) ||
          !all_ff(poisoned.out) || !all_ff(poisoned.lse) || poisoned.seqs != seqs) {
        std::printf("FAIL: gpu_inputs: case %s source %d: the preparation with poisoned inputs "
                    "left other bytes than 0xFF (or failed: %s)\n",
                    dcp::format_case_id(c).c_str(), src, cudaGetErrorString(cudaGetLastError()));
        return 1;
      }
      std::vector<uint8_t> slow_out, slow_lse;
      if (!produce_slow(c, streams, inputs.partial_lse, src % 2 == 1, slow_out, slow_lse)) {
        std::printf("FAIL: gpu_inputs: CUDA error (slow producer): %s\n",
                    cudaGetErrorString(cudaGetLastError()));
        return 1;
      }
      if (slow_out != host || slow_lse != inputs.partial_lse) {
        std::printf("FAIL: gpu_inputs: case %s source %d: the slow producer's %s differs from "
                    "the host's\n",
                    dcp::format_case_id(c).c_str(), src,
                    slow_out != host ? "partial_output" : "partial_lse");
        return 1;
      }
      compared += static_cast<int64_t>(host.size() / 2);
    }
  }
  // The comparison can fail: a producer with another row-scale stream differs.
  Case c = dcp::random_case(0x1a9, 0, 8, *dcp::find_geometry("tiny"));
  c.empty = dcp::EmptyPattern::kNone;
  c.special = dcp::SpecialLse::kNone;
  const dcp::OpGenerator gen(c, 0, 0);
  const dcp::SourceInputs inputs = dcp::generate_source_inputs(c, 0, 0, 0);
  Prepared tweaked;
  if (!prepare(c, dcp::output_streams(gen, c, 0), 1, inputs.partial_lse, {}, false, tweaked) ||
      tweaked.out == inputs.partial_output) {
    std::printf("FAIL: gpu_inputs: a producer with a wrong row-scale key matched the host\n");
    return 1;
  }
  std::printf("PASS: gpu_inputs: %lld elements of 60 random cases bit-identical to the host "
              "(the preparation, its LSE, sequences and region, and the slow producer); a wrong "
              "producer differs\n",
              static_cast<long long>(compared));
  return 0;
}
