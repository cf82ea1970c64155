#include "device_value_table.h"

#include "generator_formula.h"

namespace dcp {
namespace {

constexpr uint32_t kPerFormat = 4 * kValueTableSize;

__global__ void fill_value_table(uint16_t* bits) {
  const size_t slot = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (slot >= kDeviceValueTableSlots) return;
  const bool bf16 = slot >= kPerFormat;
  const auto within = static_cast<uint32_t>(slot % kPerFormat);
  const int k = static_cast<int>(within / kValueTableSize);
  const uint32_t i = within % kValueTableSize;
  bits[slot] = value_table_bits(bf16, k, i);
}

}  // namespace

size_t device_value_table_bytes() {
  return kDeviceValueTableSlots * sizeof(uint16_t);
}

cudaError_t fill_device_value_table(void* base, cudaStream_t stream, DeviceValueTable* out) {
  if (base == nullptr || out == nullptr) return cudaErrorInvalidValue;
  auto* bits = static_cast<uint16_t*>(base);
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>((kDeviceValueTableSlots + kThreads - 1) / kThreads);
  fill_value_table<<<blocks, kThreads, 0, stream>>>(bits);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  out->bits = bits;
  return cudaSuccess;
}

}  // namespace dcp
