#include "group_barrier.h"

#include <chrono>

#include "errors.h"
#include "futex.h"

namespace dcp {
namespace {

// FNV-1a, never 0 (0 means "no barrier in progress").
uint64_t key_hash(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : key) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h == 0 ? 1 : h;
}

}  // namespace

void wait_group_barrier(BarrierSlot& slot, int group_size, std::string_view key, double timeout_s,
                        const std::function<void()>& poll) {
  const uint64_t mine = key_hash(key);
  const uint32_t gen = slot.generation.load(std::memory_order_acquire);
  uint64_t expected = 0;
  const bool same = slot.key.compare_exchange_strong(expected, mine, std::memory_order_acq_rel) ||
                    expected == mine;
  DCP_CHECK(same, HarnessError,
            "group barrier '{}': a peer of this group waits at another barrier (it skipped one "
            "after an error?)",
            key);
  if (slot.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(group_size)) {
    // The last arrival: reset for the next barrier, then release everyone.
    slot.arrived.store(0, std::memory_order_relaxed);
    slot.key.store(0, std::memory_order_relaxed);
    slot.generation.store(gen + 1, std::memory_order_release);
    futex_wake_all(slot.generation);
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  while (slot.generation.load(std::memory_order_acquire) == gen) {
    futex_wait(slot.generation, gen, 50'000'000);
    if (slot.generation.load(std::memory_order_acquire) != gen) break;
    if (poll) poll();
    DCP_CHECK(std::chrono::steady_clock::now() < deadline, HarnessError,
              "group barrier '{}' timed out after {} s", key, timeout_s);
  }
}

}  // namespace dcp
