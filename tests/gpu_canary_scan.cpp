// gpu_canary_scan: the device's canary comparison (canary_scan.h) counts the
// same changed bytes and finds the same first offset as a host scan of the
// same block: intact blocks, one byte changed at the start, in a vector's
// middle, in the tail past the last whole 16-byte vector and at the very end,
// random scatters; sizes from 1 byte to past one grid's stride; two canaries
// (the churn's 0xA5, and 0x00); one result reused throughout, as
// AllocChurn::damage reuses its own, so an intact block after a damaged one
// also tests the reset. Exit 77 (skipped, by name) without a GPU.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "canary_scan.h"
#include "gpu_test_prologue.h"

namespace {

dcp::CanaryScan host_scan(const std::vector<uint8_t>& bytes, uint8_t canary) {
  dcp::CanaryScan s{0, ~0ull};
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] == canary) continue;
    ++s.changed;
    if (s.first == ~0ull) s.first = i;
  }
  return s;
}

// The block `host` through the device scan into `result`; false (with a
// line) on a CUDA error or a verdict other than the host's.
bool same_verdict(const std::vector<uint8_t>& host, uint8_t canary, dcp::CanaryScan* result,
                  const char* what) {
  void* dev = nullptr;
  dcp::CanaryScan got{};
  const size_t bytes = host.size();
  bool ok = cudaMalloc(&dev, bytes) == cudaSuccess &&
            cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
            dcp::launch_canary_scan(dev, bytes, canary, result, nullptr) == cudaSuccess &&
            cudaMemcpy(&got, result, sizeof got, cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(dev);
  if (!ok) {
    std::printf("FAIL: gpu_canary_scan: %s (%zu bytes, canary 0x%02x): %s\n", what, bytes, canary,
                cudaGetErrorString(cudaGetLastError()));
    return false;
  }
  const dcp::CanaryScan want = host_scan(host, canary);
  if (got.changed == want.changed && got.first == want.first) return true;
  std::printf(
      "FAIL: gpu_canary_scan: %s (%zu bytes, canary 0x%02x): device %llu changed, first "
      "%llu; host %llu, %llu\n",
      what, bytes, canary, got.changed, got.first, want.changed, want.first);
  return false;
}

}  // namespace

int main() {
  if (dcp::skip_without_gpu("gpu_canary_scan")) return 77;
  dcp::CanaryScan* result = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&result), sizeof *result) != cudaSuccess) {
    std::printf("FAIL: gpu_canary_scan: cudaMalloc: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  std::mt19937_64 rng(0xca9a);
  int blocks = 0, failed = 0;
  for (uint8_t canary : {uint8_t{0xA5}, uint8_t{0x00}}) {
    // 1024 blocks x 256 threads x 16 bytes = 4 MiB a grid stride: past it too.
    for (size_t bytes : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{4096}, size_t{4099},
                         size_t{100003}, size_t{4} << 20, (size_t{9} << 20) + 7}) {
      // Each edit's offsets are within the block; a block without whole
      // vectors has no vector middle, one that ends on a vector no tail.
      std::vector<std::pair<const char*, std::vector<size_t>>> edits = {
          {"first byte", {0}}, {"intact", {}}, {"last byte", {bytes - 1}}};
      if (bytes >= 16) edits.push_back({"middle of a vector", {bytes / 2 / 16 * 16 + 7}});
      if (bytes % 16 != 0)
        edits.push_back({"tail past the vectors", {bytes / 16 * 16 + (bytes % 16) / 2}});
      std::vector<size_t> scatter;
      for (int k = 0; k < 40; ++k) scatter.push_back(rng() % bytes);
      edits.emplace_back("random scatter", scatter);
      for (const auto& [what, at] : edits) {
        std::vector<uint8_t> b(bytes, canary);
        for (size_t i : at) b.at(i) = static_cast<uint8_t>(canary ^ (1 + rng() % 255));
        ++blocks;
        failed += same_verdict(b, canary, result, what) ? 0 : 1;
      }
    }
  }
  cudaFree(result);
  if (failed > 0) {
    std::printf("FAIL: gpu_canary_scan: %d of %d blocks\n", failed, blocks);
    return 1;
  }
  std::printf("PASS: gpu_canary_scan: %d blocks, the device's verdict the host's\n", blocks);
  return 0;
}
