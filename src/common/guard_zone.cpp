#include "guard_zone.h"

#include <fmt/format.h>

#include <algorithm>

namespace dcp {

size_t guard_bytes_for(size_t row_bytes) {
  const size_t rounded = (row_bytes + 255) / 256 * 256;
  return std::clamp<size_t>(rounded, 4096, 65536);
}

std::string describe_guard_damage(const char* buffer, const uint8_t* before, const uint8_t* after,
                                  size_t guard_bytes) {
  std::string out;
  auto add = [&](const std::string& part) { out += out.empty() ? part : "; " + part; };
  if (before != nullptr) {
    size_t changed = 0, nearest = 0;  // nearest: distance before the start, 1-based
    for (size_t i = 0; i < guard_bytes; ++i) {
      if (before[i] == kGuardCanary) continue;
      ++changed;
      nearest = guard_bytes - i;  // later bytes are nearer; the last one wins
    }
    if (changed > 0) {
      add(fmt::format("'{}' was written before its start: {} byte{} changed, the nearest at -{}",
                      buffer, changed, changed == 1 ? "" : "s", nearest));
    }
  }
  if (after != nullptr) {
    size_t changed = 0, first = 0;
    for (size_t i = guard_bytes; i-- > 0;) {
      if (after[i] == kGuardCanary) continue;
      ++changed;
      first = i;  // earlier bytes are nearer; the loop ends at the smallest
    }
    if (changed > 0) {
      add(fmt::format("'{}' was written past its end: {} byte{} changed, the first at +{} after "
                      "the end",
                      buffer, changed, changed == 1 ? "" : "s", first));
    }
  }
  return out;
}

}  // namespace dcp
