// How a worker's threads wait for the device (DCP_SYNC, a diagnosis knob):
// blocking unless the variable says otherwise. The CLI reads it once before
// any worker starts, so a bad value is a usage error (exit 2), not a worker
// that dies at start-up; the GPU backend maps it to cudaSetDeviceFlags.
#pragma once

namespace dcp {

enum class SyncMode { kAuto, kSpin, kYield, kBlock };

// Unset or empty: kBlock. Throws UsageError for any other word than auto,
// spin, yield or block.
SyncMode parse_sync_mode(const char* value);
SyncMode sync_mode_from_env();  // parse_sync_mode(getenv("DCP_SYNC"))

}  // namespace dcp
