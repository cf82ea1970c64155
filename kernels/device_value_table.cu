#include "device_value_table.h"

#include "generator_formula.h"

namespace dcp {
namespace {

constexpr uint32_t kPerFormat = 4 * kValueTableSize;
constexpr size_t kBitsBytes = kDeviceValueTableSlots * sizeof(uint16_t);  // a multiple of 256

__global__ void fill_value_tables(uint16_t* bits, uint16_t* check) {
  const size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (j < kDeviceValueTableSlots) {
    const bool bf16 = j >= kPerFormat;
    const auto within = static_cast<uint32_t>(j % kPerFormat);
    bits[j] = value_table_bits(bf16, static_cast<int>(within / kValueTableSize),
                               within % kValueTableSize);
  }
  if (j < kCheckTableEntries) check[j] = check_table_entry(j);
}

}  // namespace

size_t device_value_table_bytes() {
  static_assert(kBitsBytes % 256 == 0);
  return kBitsBytes + kCheckTableEntries * sizeof(uint16_t);
}

cudaError_t fill_device_value_table(void* base, cudaStream_t stream, DeviceValueTable* out) {
  if (base == nullptr || out == nullptr) return cudaErrorInvalidValue;
  auto* bits = static_cast<uint16_t*>(base);
  auto* check = reinterpret_cast<uint16_t*>(static_cast<uint8_t*>(base) + kBitsBytes);
  constexpr int kThreads = 256;
  constexpr size_t kFill = kCheckTableEntries > kDeviceValueTableSlots ? kCheckTableEntries : kDeviceValueTableSlots;
  const auto blocks = static_cast<unsigned>((kFill + kThreads - 1) / kThreads);
  fill_value_tables<<<blocks, kThreads, 0, stream>>>(bits, check);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  out->bits = bits;
  out->check = check;
  return cudaSuccess;
}

}  // namespace dcp
