// A barrier for the ranks of one DCP group through shared memory (a slot on the
// status board's barrier pages), for the two barriers around every case's
// begin_case: the relay through the supervisor's socket costs about 0.3-0.5 ms
// a barrier on a busy host, this a futex wake. The keys must match: every
// arrival names its barrier, and a rank arriving with another key (a rank
// that skipped one after an error) makes the ones that see it throw instead
// of pairing two different barriers.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string_view>

namespace dcp {

struct alignas(64) BarrierSlot {
  std::atomic<uint32_t> arrived{0};
  std::atomic<uint32_t> generation{0};  // the futex word: bumped by the last arrival
  std::atomic<uint64_t> key{0};         // the barrier in progress (0: none yet)
};
static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "barrier words are shared between processes");

// Returns once all `group_size` members called it with the same `key` on this
// slot. Throws HarnessError when an arrival with another key was seen, or
// after `timeout_s`. `poll` runs every ~50 ms while waiting (the worker reads
// its socket there, and may throw to end the wait).
void wait_group_barrier(BarrierSlot& slot, int group_size, std::string_view key, double timeout_s,
                        const std::function<void()>& poll);

}  // namespace dcp
