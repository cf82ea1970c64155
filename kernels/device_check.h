// The device checker: one call's output checked where it lies, against the
// float64 reference, element by element, under the CPU checker's tolerance
// rule (reference/check_math.h: the same arithmetic, bit for bit). Only the
// verdict comes back: counts, the first mismatches in the CPU checker's order,
// the guard zones' state and the output digest (output_digest.h).
//
// Contract: the inputs are regenerated on the device from the counter-based
// formulas (cases/generator_formula.h) and the host's small per-call tables
// (row kinds); nothing the kernel under test wrote is trusted but the output
// region itself. The row math is device_check_row.h (tested on the host);
// the launch is device_check_launch.h. Plain C++ (the CPU side reads it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "generator_formula.h"
#include "hd.h"
#include "output_region.h"

namespace dcp {

inline constexpr int kDeviceCheckMaxSources = 16;  // larger groups are checked on the CPU
inline constexpr int kDeviceCheckReported = 8;     // first mismatches kept (the CPU's max_reported)

struct DeviceMismatch {
  int32_t token = 0, head = 0;  // head within the rank's slice
  int32_t dim = 0;              // -1: the combined LSE
  int32_t reserved = 0;
  double got = 0, want = 0, tol = 0;
};

// What comes back to the host (pinned memory), written by the check's last block.
struct DeviceCheckResult {
  unsigned long long num_checked = 0, num_mismatches = 0, num_nan = 0;
  uint32_t num_reported = 0;
  uint32_t guard_damaged = 0;  // some guard byte is not the canary
  DeviceMismatch first[kDeviceCheckReported];
  uint32_t written = 0;  // 1 once the check wrote this result (the host clears it before)
  uint32_t reserved = 0;
  uint64_t digest = 0;  // call_output_digest: the output's, then the combined LSE's folded in
};

// One call on one rank. Pointers are device memory on the GPU (host memory
// in the host tests of the row math).
struct DeviceCheckParams {
  const uint8_t* output = nullptr;      // [T, H, D] 16-bit (out_format 0 fp16, 1 bf16)
  const float* combined_lse = nullptr;  // [T, H] fp32, or null when the kernel writes none
  int num_tokens = 0, heads = 0, head_dim = 0;  // T, H (per rank), D
  int dcp_size = 0, group_rank = 0;
  int out_format = 1;  // Format's order: 0 fp16, 1 bf16
  int lse_format = 2;  // 0 fp16, 1 bf16, 2 fp32
  bool base_e = false;
  LseRecipe lse;
  uint64_t lse_key[kDeviceCheckMaxSources] = {};
  uint64_t row_key[kDeviceCheckMaxSources] = {};
  const uint8_t* row_kinds = nullptr;  // [W][T] LseRowKind
  // The value table's bits (value_table_slot, generator_formula.h): a
  // source's element is read and decoded (exact), not recomputed. Device
  // memory (host in tests).
  const uint16_t* table = nullptr;
};

// Device scratch of one call's check: the accumulators (counts, guard
// verdict, finished blocks), the per-row mismatch flags (one bit per row),
// then the digests of 64 KiB supers.
struct DeviceCheckScratch {
  DCP_HD static size_t flag_words(int rows) { return (static_cast<size_t>(rows) + 31) / 32; }
  static size_t bytes(int rows, size_t out_bytes, size_t lse_bytes);
};

}  // namespace dcp
