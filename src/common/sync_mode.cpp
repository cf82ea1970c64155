#include "sync_mode.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "errors.h"

namespace dcp {

SyncMode parse_sync_mode(const char* value) {
  const std::string mode = value == nullptr ? "" : value;
  if (mode.empty() || mode == "block") return SyncMode::kBlock;
  if (mode == "auto") return SyncMode::kAuto;
  if (mode == "spin") return SyncMode::kSpin;
  if (mode == "yield") return SyncMode::kYield;
  throw UsageError(fmt::format("DCP_SYNC={}: must be auto, spin, yield or block", mode));
}

SyncMode sync_mode_from_env() { return parse_sync_mode(std::getenv("DCP_SYNC")); }

}  // namespace dcp
