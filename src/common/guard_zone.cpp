#include "guard_zone.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace dcp {

size_t guard_bytes_for(size_t row_bytes) {
  const size_t rounded = (row_bytes + 255) / 256 * 256;
  return std::clamp<size_t>(rounded, 4096, 65536);
}

namespace {

// Whether every byte is the canary: 8 bytes at a time (the common, intact
// case; a damaged zone is then walked byte by byte to describe it).
bool intact(const uint8_t* p, size_t n) {
  constexpr uint64_t kWord = 0x0101010101010101ull * kGuardCanary;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, sizeof w);
    if (w != kWord) return false;
  }
  for (; i < n; ++i) {
    if (p[i] != kGuardCanary) return false;
  }
  return true;
}

}  // namespace

std::string describe_guard_damage(const char* buffer, const uint8_t* before, const uint8_t* after,
                                  size_t guard_bytes) {
  if ((before == nullptr || intact(before, guard_bytes)) &&
      (after == nullptr || intact(after, guard_bytes))) {
    return "";
  }
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
