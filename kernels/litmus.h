// Litmus kernels for `dcp-check litmus` (shapes and outcomes: litmus_outcome.h)
// and the memory stress that runs beside them. Plain C++ (no CUDA syntax).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "litmus_outcome.h"

namespace dcp {

// Memory stress (Sorensen and Donaldson, PLDI 2016): extra blocks that hammer
// a scratch region while the test runs. Each stress thread picks a word of
// the scratch region by a hash of its id and the iteration and does the
// pattern's two accesses on it and on a word `stride` words further.
enum class StressPattern : int { kNone = 0, kStoreStore = 1, kStoreLoad = 2, kLoadStore = 3,
                                 kLoadLoad = 4 };

struct LitmusStress {
  StressPattern pattern = StressPattern::kNone;
  int blocks = 0;               // stress blocks beside the test blocks (0: none)
  uint32_t scratch_words = 0;   // the region hammered (a power of two)
  uint32_t stride_words = 32;   // distance between a thread's two accesses
  uint32_t max_iterations = 0;  // bound of each stress thread's loop
};

inline constexpr int kLitmusThreads = 256;  // per block, test and stress blocks alike

// One-shot launch: `instances` instances of `shape`; test thread t plays role
// roles[t] % 2 of instance roles[t] / 2 (roles: a permutation of 0 .. 2 *
// instances - 1 drawn by the host, the two roles of an instance in different
// blocks: litmus_plan.h).
// Instance i uses words x = locations[i * 32] and y = locations[(instances + i)
// * 32] (each in its own 128-byte line), which must be zero; its (r0, r1) go to
// results[2 * i], results[2 * i + 1]. Test threads first wait (bounded) until
// every test thread has arrived at words[0], so the roles really overlap; the
// stress blocks stop once words[1] counts every test thread (or after
// max_iterations). words: two zeroed u32. `system_scope`: .sys accesses and
// fences instead of .gpu.
cudaError_t launch_litmus_oneshot(LitmusShape shape, LitmusOrder order, bool system_scope,
                                  int instances, const uint32_t* roles, uint32_t* locations,
                                  uint32_t* results, uint32_t* words, const LitmusStress& stress,
                                  uint32_t* scratch, cudaStream_t stream);

// The memory stress beside a case's batch (Case::mstress): stress.blocks
// blocks of kLitmusThreads threads do the pattern on `scratch`
// (stress.scratch_words) until max_ns passed or the counter *done (device
// memory; may be null) reached `until` (wrapping compare: (int32)(*done -
// until) >= 0). Not capturable.
cudaError_t launch_memory_stress(const LitmusStress& stress, uint32_t* scratch,
                                 const volatile uint32_t* done, uint32_t until, uint64_t max_ns,
                                 cudaStream_t stream);
// One thread adds 1 to *done, ordered on `stream` (after a call's op: the
// stress that covers it may stop).
cudaError_t launch_memory_stress_release(uint32_t* done, cudaStream_t stream);

// Counter message passing (classify_counter_sample), one role per launch, so
// writer and reader can be different kernels, streams or processes.
// `mem` holds `instances` data words at mem[i * 32], as many flag words at
// mem[(instances + i) * 32], and a control line at mem[2 * instances * 32]:
// [0] the reader is running, [1] writer threads done, [2] the writer started.
// The writer's thread t drives instance slots[t]; it waits (bounded by
// wait_ns) for the reader to run, then stores rounds 1..rounds.
// The reader's thread t waits (bounded by wait_ns) for the writer to start,
// then samples instance slots[t] until it sees the last round, `max_samples`
// samples or 2 * wait_ns in all; it adds to counts[CounterSample] (four
// u64, zeroed by the caller). Both stop their stress blocks when their test
// threads are done.
struct CounterLaunch {
  LitmusOrder order = LitmusOrder::kRelaxed;  // relaxed, fenced or release-acquire
  int instances = 0;
  uint32_t rounds = 0;
  uint32_t max_samples = 0;
  uint64_t wait_ns = 0;
  const uint32_t* slots = nullptr;  // device, `instances` entries
  uint32_t* mem = nullptr;          // zeroed before the pair of launches
  uint32_t* words = nullptr;        // two zeroed u32 of this launch (stress stop count)
  unsigned long long* counts = nullptr;  // reader only
};
cudaError_t launch_counter_writer(const CounterLaunch& launch, const LitmusStress& stress,
                                  uint32_t* scratch, cudaStream_t stream);
cudaError_t launch_counter_reader(const CounterLaunch& launch, const LitmusStress& stress,
                                  uint32_t* scratch, cudaStream_t stream);

// Words of `mem` a CounterLaunch over `instances` instances needs.
inline constexpr uint64_t counter_mem_words(int instances) {
  return (2ull * static_cast<uint64_t>(instances) + 1ull) * 32ull;
}

}  // namespace dcp
