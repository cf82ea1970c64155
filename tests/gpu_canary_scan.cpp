// gpu_canary_scan: the device's canary comparison (canary_scan.h) counts the
// same changed bytes and finds the same first offset as a host scan of the
// same block: intact blocks, one byte changed at the start, in a vector's
// middle, in the tail past the last whole 16-byte vector and at the very end,
// random scatters, sizes from 1 byte to past one grid's stride. Exit 77
// (skipped, by name) without a GPU.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "canary_scan.h"
#include "gpu_test_prologue.h"

namespace {

constexpr uint8_t kCanary = 0xA5;

dcp::CanaryScan host_scan(const std::vector<uint8_t>& bytes) {
  dcp::CanaryScan s{0, ~0ull};
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] == kCanary) continue;
    ++s.changed;
    if (s.first == ~0ull) s.first = i;
  }
  return s;
}

// The block `host` through the device scan; false (with a line) on a CUDA
// error or a verdict other than the host's.
bool same_verdict(const std::vector<uint8_t>& host, const char* what) {
  void* dev = nullptr;
  dcp::CanaryScan* result = nullptr;
  dcp::CanaryScan got{};
  const size_t bytes = host.size();
  bool ok = cudaMalloc(&dev, bytes == 0 ? 1 : bytes) == cudaSuccess &&
            cudaMalloc(reinterpret_cast<void**>(&result), sizeof *result) == cudaSuccess &&
            cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
            dcp::launch_canary_scan(dev, bytes, kCanary, result, nullptr) == cudaSuccess &&
            cudaMemcpy(&got, result, sizeof got, cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(dev);
  cudaFree(result);
  if (!ok) {
    std::printf("FAIL: gpu_canary_scan: %s (%zu bytes): %s\n", what, bytes,
                cudaGetErrorString(cudaGetLastError()));
    return false;
  }
  const dcp::CanaryScan want = host_scan(host);
  if (got.changed == want.changed && got.first == want.first) return true;
  std::printf("FAIL: gpu_canary_scan: %s (%zu bytes): device %llu changed, first %llu; host %llu, %llu\n",
              what, bytes, got.changed, got.first, want.changed, want.first);
  return false;
}

}  // namespace

int main() {
  if (dcp::skip_without_gpu("gpu_canary_scan")) return 77;
  std::mt19937_64 rng(0xca9a);
  int blocks = 0, failed = 0;
  // 1024 blocks x 256 threads x 16 bytes = 4 MiB a grid stride: past it too.
  for (size_t bytes : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{4096}, size_t{4099},
                       size_t{100003}, size_t{4} << 20, (size_t{9} << 20) + 7}) {
    std::vector<uint8_t> block(bytes, kCanary);
    std::vector<std::pair<const char*, std::vector<size_t>>> edits = {
        {"intact", {}},
        {"first byte", {0}},
        {"last byte", {bytes - 1}},
        {"middle of a vector", {bytes / 2 / 16 * 16 + 7}},
        {"tail past the vectors", {bytes / 16 * 16 + (bytes % 16) / 2}},
    };
    std::vector<size_t> scatter;
    for (int k = 0; k < 40; ++k) scatter.push_back(rng() % bytes);
    edits.emplace_back("random scatter", scatter);
    for (const auto& [what, at] : edits) {
      std::vector<uint8_t> b = block;
      for (size_t i : at) {
        if (i < bytes) b[i] = static_cast<uint8_t>(kCanary ^ (1 + rng() % 255));
      }
      ++blocks;
      failed += same_verdict(b, what) ? 0 : 1;
    }
  }
  if (failed > 0) {
    std::printf("FAIL: gpu_canary_scan: %d of %d blocks\n", failed, blocks);
    return 1;
  }
  std::printf("PASS: gpu_canary_scan: %d blocks, the device's verdict the host's\n", blocks);
  return 0;
}
