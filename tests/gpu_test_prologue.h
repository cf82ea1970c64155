// What every GPU test program does first: without a GPU, say so by name and
// exit 77 (CTest reports it skipped); with one, fill the device value table
// (device_value_table.h) the check and the preparation read.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>

#include "device_value_table.h"

namespace dcp {

// True (after printing "SKIPPED: <test>: no GPU on this machine (<why>)")
// when no GPU is visible: return 77 from main. The CUDA error is named, so a
// broken driver does not pass for a machine without a GPU unnoticed.
inline bool skip_without_gpu(const char* test) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err == cudaSuccess && devices > 0) return false;
  std::printf("SKIPPED: %s: no GPU on this machine (%s)\n", test,
              err == cudaSuccess ? "0 devices" : cudaGetErrorName(err));
  return true;
}

// The value table filled and synchronised; false (after a FAIL line) on a
// CUDA error. Its memory lives as long as the process.
inline bool make_device_value_table(const char* test, DeviceValueTable* table) {
  void* mem = nullptr;
  cudaError_t err = cudaMalloc(&mem, device_value_table_bytes());
  if (err == cudaSuccess) err = fill_device_value_table(mem, nullptr, table);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err == cudaSuccess) return true;
  std::printf("FAIL: %s: the device value table: %s\n", test, cudaGetErrorString(err));
  return false;
}

}  // namespace dcp
