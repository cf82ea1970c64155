// Guard zones: canary bytes before and after every buffer the kernel under
// test may write (the output; for plugins the tail past each payload region),
// refilled before and compared after every call. A write out of bounds
// changes a canary and is reported with the buffer, the side and the offset,
// even when it lands in memory that is mapped but unused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dcp {

inline constexpr uint8_t kGuardCanary = 0xA5;  // neither poison (0xFF) nor zero

// Guard size for a buffer whose rows are `row_bytes`: at least one row (an
// off-by-one-row write lands inside), 4 KiB .. 64 KiB, a multiple of 256 so
// the buffer after a guard stays 256-byte aligned.
size_t guard_bytes_for(size_t row_bytes);

// "" when both guards hold only the canary; else one line naming `buffer`,
// the side and the changed bytes nearest the buffer, e.g.
// "'output' was written past its end: 1024 bytes changed, the first at +0
// after the end". `before` or `after` may be null (no guard on that side).
std::string describe_guard_damage(const char* buffer, const uint8_t* before, const uint8_t* after,
                                  size_t guard_bytes);

}  // namespace dcp
