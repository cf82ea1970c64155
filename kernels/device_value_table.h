// The value table on the device (generator_formula.h, value_table_slot): the
// call preparation reads partial_output's elements from `bits`, and the
// device checker the sources' values (decoded: exact), instead of evaluating
// the formula per element. Filled once per GPU backend (a worker has one per
// group size, geometry and kernel), on the device, from the formula itself;
// the same table the host reads (value_table.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dcp {

struct DeviceValueTable {
  const uint16_t* bits = nullptr;  // [kDeviceValueTableSlots] as stored
};

size_t device_value_table_bytes();
// Fills the table in `base` (device memory of device_value_table_bytes())
// on `stream`; *out views it (valid once the stream reaches that point).
cudaError_t fill_device_value_table(void* base, cudaStream_t stream, DeviceValueTable* out);

}  // namespace dcp
