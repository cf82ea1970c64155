// What `dcp-check litmus` runs and how it tallies what it saw. Pure C++ (the
// GPU part is litmus_runner.h), so CI tests the outcome classification, the
// role draws and the rates on the host.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "litmus.h"

namespace dcp {

// Where the two roles of an instance run.
enum class LitmusPlacement : int {
  kBlocks = 0,     // different blocks of one launch (one-shot shapes)
  kStreams = 1,    // two kernels of one process on two streams (counter mp)
  kProcesses = 2,  // two processes sharing the GPU, the memory owned by the
                   // reader and mapped by the writer through CUDA IPC, as our
                   // ranks' symmetric memory is (counter mp)
};

struct LitmusTest {
  LitmusShape shape = LitmusShape::kMp;
  LitmusOrder order = LitmusOrder::kRelaxed;
  LitmusPlacement placement = LitmusPlacement::kBlocks;
  bool system_scope = false;  // counter tests: always (our flags are .sys)
};

// "mp relaxed", "sb fenced", "mp release-acquire", "mp writer-fence".
std::string litmus_test_name(const LitmusTest& t);
const char* placement_name(LitmusPlacement p);  // blocks | streams | processes
const char* order_name(LitmusOrder o);
const char* shape_name(LitmusShape s);
const char* stress_pattern_name(StressPattern p);  // none | st-st | st-ld | ld-st | ld-ld
// "none" or "st-st 8 KiB x66 blocks".
std::string stress_name(const LitmusStress& s);

// The tests of the table, in order: the one-shot shapes across blocks, then
// counter message passing between streams and between processes.
std::vector<LitmusTest> litmus_tests();
// The test the stress sweep is calibrated on: mp relaxed across blocks.
LitmusTest calibration_test();
// The stress settings tried, for a GPU of `sms` SMs: each pattern on a
// small (8 KiB) and a large (4 MiB) region, with one stress block per SM.
std::vector<LitmusStress> stress_sweep(int sms);

// Test thread t plays role roles[t] % 2 of instance roles[t] / 2. A uniform
// permutation, then repaired so that no instance has both roles in one block
// of `block_threads` threads (writer and reader in one block showed no weak
// outcome in the probe: they would only dilute the rate). Needs at least two
// blocks' worth of threads.
std::vector<uint32_t> draw_roles(int instances, int block_threads, std::mt19937_64& rng);
// A uniform permutation of 0 .. n - 1 (counter tests: thread -> instance).
std::vector<uint32_t> draw_permutation(int n, std::mt19937_64& rng);

// What one setting (test x stress) saw.
struct LitmusTally {
  uint64_t iterations = 0;  // one-shot: instances run; counter: reader samples
  uint64_t overlapped = 0;  // one-shot: interleaved outcomes; counter: samples mid-write
  uint64_t weak = 0;
  uint64_t invalid = 0;     // values no thread wrote: a harness bug
  uint64_t outcomes[kLitmusOutcomeCount] = {};  // one-shot only, by LitmusOutcome
  bool counter = false;     // counter samples (tally_counter), not one-shot instances
  // Weak outcomes per million of the samples that could show one: one-shot:
  // all instances; counter: samples taken while the writer was mid-way
  // (weak ones included).
  double weak_per_million() const;
  void add(const LitmusTally& other);
};
// Adds one launch's results (2 words per instance: r0, r1).
void tally_oneshot(LitmusShape shape, const std::vector<uint32_t>& results, LitmusTally& tally);
// Adds one reader's counts (indexed by CounterSample).
void tally_counter(const unsigned long long counts[4], LitmusTally& tally);

}  // namespace dcp
