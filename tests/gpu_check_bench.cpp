// gpu_check_bench: the harness's own per-call kernels alone, on one GPU in
// one process (no peers, no MPS share): the device check (`check_call`) and
// the call preparation (`call_prep_kernel`) for kimi calls at W = 2, 4, 8 and
// T = 1, 16, 64, 128, timed with events over --reps back-to-back launches.
// Each check's verdict is held to what it must be (every element checked, no
// mismatch on the float64 reference rounded once; exactly one on a copy with
// one element flipped), so a fast wrong kernel does not print a number.
// Not a CTest test; `ci/gpu.sh checkbench` runs it, and Nsight Compute on it
// when ncu is installed (one process, so nothing waits on a peer).
//
//   gpu_check_bench [--reps N] [--only W,T] [--fp16]   (--only: that one row, e.g. under ncu;
//   --fp16: fp16 outputs, else bf16)
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "call_prep.h"
#include "checker.h"
#include "device_check_launch.h"
#include "device_value_table.h"
#include "device_verdict.h"
#include "generator.h"
#include "geometry.h"
#include "gpu_test_prologue.h"

namespace {

using namespace dcp;

constexpr uint8_t kCanary = 0xA5;
constexpr size_t kGuard = 1024;

bool ok(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return true;
  std::printf("FAIL: gpu_check_bench: %s: %s\n", what, cudaGetErrorString(err));
  return false;
}

struct Timing {
  float check_us = 0, prep_us = 0;
};

// Launches `n` times, returns microseconds per launch (events on `s`).
template <typename Launch>
bool time_launches(int n, cudaStream_t s, float* us, Launch launch) {
  cudaEvent_t a = nullptr, b = nullptr;
  bool good = ok(cudaEventCreate(&a), "event") && ok(cudaEventCreate(&b), "event") &&
              ok(cudaEventRecord(a, s), "record");
  for (int i = 0; good && i < n; ++i) good = ok(launch(), "launch");
  float ms = 0;
  good = good && ok(cudaEventRecord(b, s), "record") && ok(cudaEventSynchronize(b), "sync") &&
         ok(cudaEventElapsedTime(&ms, a, b), "elapsed");
  if (a != nullptr) cudaEventDestroy(a);
  if (b != nullptr) cudaEventDestroy(b);
  *us = 1e3f * ms / static_cast<float>(n);
  return good;
}

// One (W, T): the check of group rank 0's reference output, then the
// preparation of source 0's partial_output.
bool bench_one(int w, int t, DType out_dtype, int reps, const DeviceValueTable& table, Timing* out) {
  Case c;
  c.dcp_size = w;
  c.geometry = *find_geometry("kimi");
  c.num_tokens = t;
  c.out_dtype = out_dtype;
  c.lse_dtype = DType::kFp32;
  c.lse_base = LseBase::kE;
  c.seed = 0xbe4c4;
  const OpGenerator gen(c, 0, 0);
  std::vector<uint8_t> want = rounded_reference_output(c, 0, 0, 0);
  const std::vector<uint8_t> kinds = row_kinds_of(c, gen);
  DeviceCheckParams p = device_check_params(c, gen, 0);
  const int rows = p.num_tokens * p.heads;

  OutputRegion region;
  region.guard_bytes = kGuard;
  region.out_bytes = want.size();
  std::vector<uint8_t> host_region(region.total_bytes(), kCanary);
  std::memcpy(host_region.data() + kGuard, want.data(), want.size());
  void *dev_region = nullptr, *dev_kinds = nullptr, *scratch = nullptr, *partial = nullptr,
       *flags = nullptr, *prep_region = nullptr;
  DeviceCheckResult* result = nullptr;
  const size_t scratch_bytes = DeviceCheckScratch::bytes(rows, region.out_bytes, 0);
  const OutputStreams streams = output_streams(gen, c, 0);
  const size_t partial_bytes = 2 * static_cast<size_t>(t) * c.out_token_stride();
  bool good =
      ok(cudaMalloc(&dev_region, region.total_bytes()), "malloc region") &&
      ok(cudaMalloc(&dev_kinds, kinds.size()), "malloc kinds") &&
      ok(cudaMalloc(&scratch, scratch_bytes), "malloc scratch") &&
      ok(cudaMemset(scratch, 0, scratch_bytes), "zero scratch") &&
      ok(cudaMallocHost(reinterpret_cast<void**>(&result), sizeof(DeviceCheckResult)),
         "pinned result") &&
      ok(cudaMemcpy(dev_region, host_region.data(), host_region.size(), cudaMemcpyHostToDevice),
         "copy region") &&
      ok(cudaMemcpy(dev_kinds, kinds.data(), kinds.size(), cudaMemcpyHostToDevice), "copy kinds") &&
      ok(cudaMalloc(&partial, partial_bytes), "malloc partial_output") &&
      ok(cudaMalloc(&flags, streams.token_normal.size()), "malloc flags") &&
      ok(cudaMalloc(&prep_region, region.total_bytes()), "malloc prep region") &&
      ok(cudaMemcpy(flags, streams.token_normal.data(), streams.token_normal.size(),
                    cudaMemcpyHostToDevice),
         "copy flags");
  p.output = static_cast<const uint8_t*>(dev_region) + kGuard;
  p.row_kinds = static_cast<const uint8_t*>(dev_kinds);
  p.table = table.bits;
  region.base = dev_region;
  auto check = [&] {
    return launch_device_check(p, region, kCanary, scratch, scratch_bytes, true, result, nullptr);
  };
  // The verdicts: all checked and passing; one flipped element found.
  const auto elements = static_cast<unsigned long long>(rows) * p.head_dim;
  for (int flipped = 0; good && flipped < 2; ++flipped) {
    result->written = 0;
    good = ok(check(), "check") && ok(cudaDeviceSynchronize(), "check sync");
    if (good && (result->written != 1 || result->num_checked != elements ||
                 result->num_mismatches != static_cast<unsigned long long>(flipped) ||
                 result->guard_damaged != 0)) {
      std::printf("FAIL: gpu_check_bench: W=%d T=%d%s: written %u, %llu checked (want %llu), "
                  "%llu mismatches (want %d), guard %u\n",
                  w, t, flipped ? " (one element flipped)" : "", result->written,
                  result->num_checked, elements, result->num_mismatches, flipped,
                  result->guard_damaged);
      good = false;
    }
    if (good && flipped == 0) {  // flip an exponent bit of the middle element
      const size_t at = kGuard + (want.size() / 4) * 2 + 1;
      host_region[at] ^= 0x40;
      good = ok(cudaMemcpy(static_cast<uint8_t*>(dev_region) + at, host_region.data() + at, 1,
                           cudaMemcpyHostToDevice),
                "flip");
    }
  }
  good = good && time_launches(reps, nullptr, &out->check_us, check);

  CallPrep prep;
  prep.recipe = streams.recipe(c, static_cast<const uint8_t*>(flags));
  prep.recipe.table = table.bits;
  prep.partial_output = static_cast<uint16_t*>(partial);
  prep.region = region;
  prep.region.base = prep_region;
  prep.canary = kCanary;
  good = good && time_launches(reps, nullptr, &out->prep_us,
                               [&] { return launch_call_prep(prep, nullptr); });
  for (void* ptr : {dev_region, dev_kinds, scratch, partial, flags, prep_region}) cudaFree(ptr);
  if (result != nullptr) cudaFreeHost(result);
  return good;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 200, only_w = 0, only_t = 0;
  DType out_dtype = DType::kBf16;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--only" && i + 1 < argc &&
               std::sscanf(argv[++i], "%d,%d", &only_w, &only_t) == 2) {
    } else if (a == "--fp16") {
      out_dtype = DType::kFp16;
    } else {
      std::fprintf(stderr, "usage: gpu_check_bench [--reps N] [--only W,T] [--fp16]\n");
      return 2;
    }
  }
  if (skip_without_gpu("gpu_check_bench")) return 77;
  DeviceValueTable table;
  if (!make_device_value_table("gpu_check_bench", &table)) return 1;
  // As the GPU backend does: without it every launch of the check (its frame
  // past the context's first 1 KiB of stack) resizes local memory.
  if (!ok(reserve_device_check_stack(), "reserve the check's stack")) return 1;
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const std::string format(to_string(out_dtype));
  std::printf("gpu_check_bench: %s, %d SMs, kimi (H=16, D=512), %s, %d launches each\n",
              prop.name, prop.multiProcessorCount, format.c_str(), reps);
  std::printf("%3s %5s %12s %14s %10s %12s\n", "W", "T", "elements", "check_us", "Gelem/s",
              "prep_us");
  for (int w : {2, 4, 8}) {
    for (int t : {1, 16, 64, 128}) {
      if (only_w != 0 && (w != only_w || t != only_t)) continue;
      Timing tm;
      if (!bench_one(w, t, out_dtype, reps, table, &tm)) return 1;
      const double elems = 16.0 * 512 * t;
      std::printf("%3d %5d %12.0f %14.1f %10.2f %12.1f\n", w, t, elems, tm.check_us,
                  elems / (tm.check_us * 1e3), tm.prep_us);
    }
  }
  return 0;
}
