// Litmus tests of the GPU memory model (`dcp-check litmus`): what each shape's
// threads do and which observed values are weak. Plain C++, compiled for the
// host (unit tests, the report) and the device (the counter readers classify
// as they sample). docs/DESIGN.md, "Weak memory on one GPU", says why these
// shapes and how the rates are read.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DCP_LITMUS_HD __host__ __device__
#else
#define DCP_LITMUS_HD
#endif

namespace dcp {

// One-shot shapes: two threads, locations x and y zero before the launch,
// each instance run once per launch.
//   mp (message passing): T0: x = 1; y = 1.      T1: r0 = y; r1 = x.
//   sb (store buffering): T0: x = 1; r0 = y.     T1: y = 1; r1 = x.
//   lb (load buffering):  T0: r0 = x; y = 1.     T1: r1 = y; x = 1.
enum class LitmusShape : int { kMp = 0, kSb = 1, kLb = 2 };

// How each thread orders its two accesses (all accesses are at least
// relaxed atomics of the named scope, never plain cached loads).
//   relaxed: nothing between them.
//   fenced: a fence.sc between them in both threads (__threadfence()).
//   release-acquire: mp only: T0's second store is a release, T1's first
//     load an acquire (what our kernels' flags use).
//   writer-fence: mp only: the fence in T0 alone (T1's loads may still pass
//     each other).
enum class LitmusOrder : int { kRelaxed = 0, kFenced = 1, kReleaseAcquire = 2, kWriterFence = 3 };

// Outcome of one one-shot instance, from (r0, r1).
enum class LitmusOutcome : int {
  kFirstThenSecond = 0,  // as if T0 ran entirely before T1
  kSecondThenFirst = 1,  // as if T1 ran entirely before T0
  kInterleaved = 2,      // sequentially consistent, the threads overlapped
  kWeak = 3,             // no interleaving explains it: the memory model's weak outcome
  kInvalid = 4,          // a value neither 0 nor 1: a harness bug
};
inline constexpr int kLitmusOutcomeCount = 5;

DCP_LITMUS_HD inline LitmusOutcome classify_litmus(LitmusShape shape, uint32_t r0, uint32_t r1) {
  if (r0 > 1u || r1 > 1u) return LitmusOutcome::kInvalid;
  switch (shape) {
    case LitmusShape::kMp:  // T1 read flag y into r0, data x into r1
      if (r0 == 1u && r1 == 0u) return LitmusOutcome::kWeak;
      if (r0 == 1u) return LitmusOutcome::kFirstThenSecond;
      if (r1 == 0u) return LitmusOutcome::kSecondThenFirst;
      return LitmusOutcome::kInterleaved;  // flag not yet, data already
    case LitmusShape::kSb:
      if (r0 == 0u && r1 == 0u) return LitmusOutcome::kWeak;
      if (r0 == 0u) return LitmusOutcome::kFirstThenSecond;  // T0 read y before T1 stored
      if (r1 == 0u) return LitmusOutcome::kSecondThenFirst;
      return LitmusOutcome::kInterleaved;
    case LitmusShape::kLb:
      if (r0 == 1u && r1 == 1u) return LitmusOutcome::kWeak;
      if (r1 == 1u) return LitmusOutcome::kFirstThenSecond;  // T1 saw T0's store of y
      if (r0 == 1u) return LitmusOutcome::kSecondThenFirst;
      return LitmusOutcome::kInterleaved;
  }
  return LitmusOutcome::kInvalid;
}

// Counter message passing, the shape of our kernels' signalling between
// processes: the writer stores round r into data then into flag for
// r = 1..rounds; the reader samples flag then data until it sees the last
// round. Data is always stored before flag, so a reader that sees flag = f
// must see data >= f; data < f is the weak outcome.
enum class CounterSample : int {
  kIdle = 0,     // flag 0 or rounds: the writer had not started or had finished
  kOverlap = 1,  // the writer was mid-way: the sample could have been weak
  kWeak = 2,     // data older than the flag
  kInvalid = 3,  // a value past the last round: a harness bug
};

DCP_LITMUS_HD inline CounterSample classify_counter_sample(uint32_t flag, uint32_t data,
                                                           uint32_t rounds) {
  if (flag > rounds || data > rounds) return CounterSample::kInvalid;
  if (data < flag) return CounterSample::kWeak;
  if (flag == 0u || flag == rounds) return CounterSample::kIdle;
  return CounterSample::kOverlap;
}

}  // namespace dcp
