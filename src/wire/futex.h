// Futex waits and wakes on a word in shared memory. Shared (not
// FUTEX_PRIVATE): the word lives in a segment several processes map.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

namespace dcp {

// Returns when woken, when the word no longer holds `expected`, or after
// `timeout_ns` (< 1 s).
inline void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, long timeout_ns) {
  const timespec ts{0, timeout_ns};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

inline void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace dcp
