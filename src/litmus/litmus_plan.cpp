#include "litmus_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace dcp {

const char* shape_name(LitmusShape s) {
  switch (s) {
    case LitmusShape::kMp: return "mp";
    case LitmusShape::kSb: return "sb";
    case LitmusShape::kLb: return "lb";
  }
  return "?";
}

const char* order_name(LitmusOrder o) {
  switch (o) {
    case LitmusOrder::kRelaxed: return "relaxed";
    case LitmusOrder::kFenced: return "fenced";
    case LitmusOrder::kReleaseAcquire: return "release-acquire";
    case LitmusOrder::kWriterFence: return "writer-fence";
  }
  return "?";
}

const char* placement_name(LitmusPlacement p) {
  switch (p) {
    case LitmusPlacement::kBlocks: return "blocks";
    case LitmusPlacement::kStreams: return "streams";
    case LitmusPlacement::kProcesses: return "processes";
  }
  return "?";
}

const char* stress_pattern_name(StressPattern p) {
  switch (p) {
    case StressPattern::kNone: return "none";
    case StressPattern::kStoreStore: return "st-st";
    case StressPattern::kStoreLoad: return "st-ld";
    case StressPattern::kLoadStore: return "ld-st";
    case StressPattern::kLoadLoad: return "ld-ld";
  }
  return "?";
}

std::string stress_name(const LitmusStress& s) {
  if (s.pattern == StressPattern::kNone || s.blocks == 0) return "none";
  const uint64_t bytes = uint64_t{s.scratch_words} * 4;
  const std::string size = bytes >= (1u << 20) ? fmt::format("{} MiB", bytes >> 20)
                                               : fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} {} x{} blocks", stress_pattern_name(s.pattern), size, s.blocks);
}

std::string litmus_test_name(const LitmusTest& t) {
  const bool counter = t.placement != LitmusPlacement::kBlocks;
  return fmt::format("{}{} {}{}", shape_name(t.shape), counter ? "-counter" : "",
                     order_name(t.order), t.system_scope ? " .sys" : " .gpu");
}

std::vector<LitmusTest> litmus_tests() {
  using S = LitmusShape;
  using O = LitmusOrder;
  using P = LitmusPlacement;
  return {
      {S::kMp, O::kRelaxed, P::kBlocks, false},
      {S::kMp, O::kWriterFence, P::kBlocks, false},
      {S::kMp, O::kFenced, P::kBlocks, false},
      {S::kMp, O::kReleaseAcquire, P::kBlocks, false},
      {S::kMp, O::kRelaxed, P::kBlocks, true},
      {S::kSb, O::kRelaxed, P::kBlocks, false},
      {S::kSb, O::kFenced, P::kBlocks, false},
      {S::kLb, O::kRelaxed, P::kBlocks, false},
      {S::kLb, O::kFenced, P::kBlocks, false},
      {S::kMp, O::kRelaxed, P::kStreams, true},
      {S::kMp, O::kFenced, P::kStreams, true},
      {S::kMp, O::kReleaseAcquire, P::kStreams, true},
      {S::kMp, O::kRelaxed, P::kProcesses, true},
      {S::kMp, O::kFenced, P::kProcesses, true},
      {S::kMp, O::kReleaseAcquire, P::kProcesses, true},
  };
}

LitmusTest calibration_test() { return litmus_tests().front(); }

std::vector<LitmusStress> stress_sweep(int sms) {
  std::vector<LitmusStress> out;
  for (StressPattern p : {StressPattern::kStoreStore, StressPattern::kStoreLoad,
                          StressPattern::kLoadStore, StressPattern::kLoadLoad}) {
    for (uint32_t words : {2048u, 1u << 20}) {  // 8 KiB (a few L2 sets), 4 MiB
      LitmusStress s;
      s.pattern = p;
      s.blocks = std::max(1, sms);
      s.scratch_words = words;
      s.stride_words = 32;
      s.max_iterations = 1u << 16;
      out.push_back(s);
    }
  }
  return out;
}

std::vector<uint32_t> draw_permutation(int n, std::mt19937_64& rng) {
  std::vector<uint32_t> p(static_cast<size_t>(std::max(0, n)));
  std::iota(p.begin(), p.end(), 0u);
  std::shuffle(p.begin(), p.end(), rng);
  return p;
}

std::vector<uint32_t> draw_roles(int instances, int block_threads, std::mt19937_64& rng) {
  const int threads = 2 * instances;
  if (instances < 1 || block_threads < 1 || threads < 2 * block_threads) {
    throw std::invalid_argument("draw_roles: needs at least two blocks of test threads");
  }
  // slot[2i + role] = the thread of that role; repaired, then inverted.
  std::vector<uint32_t> slot = draw_permutation(threads, rng);
  auto block = [&](uint32_t thread) { return thread / static_cast<uint32_t>(block_threads); };
  auto same = [&](int i) { return block(slot[2 * i]) == block(slot[2 * i + 1]); };
  std::uniform_int_distribution<int> pick(0, instances - 1);
  for (int i = 0; i < instances; ++i) {
    while (same(i)) {  // swap readers with a random instance until both are split
      const int j = pick(rng);
      std::swap(slot[2 * i + 1], slot[2 * j + 1]);
      if (same(j)) std::swap(slot[2 * i + 1], slot[2 * j + 1]);  // j must stay split
    }
  }
  std::vector<uint32_t> roles(static_cast<size_t>(threads));
  for (int k = 0; k < threads; ++k) roles[slot[k]] = static_cast<uint32_t>(k);
  return roles;
}

double LitmusTally::weak_per_million() const {
  const uint64_t base = counter ? overlapped + weak : iterations;
  return base == 0 ? 0.0 : 1e6 * static_cast<double>(weak) / static_cast<double>(base);
}

void LitmusTally::add(const LitmusTally& o) {
  iterations += o.iterations;
  overlapped += o.overlapped;
  weak += o.weak;
  invalid += o.invalid;
  counter = counter || o.counter;
  for (int k = 0; k < kLitmusOutcomeCount; ++k) outcomes[k] += o.outcomes[k];
}

void tally_oneshot(LitmusShape shape, const std::vector<uint32_t>& results, LitmusTally& t) {
  for (size_t i = 0; i + 1 < results.size(); i += 2) {
    const LitmusOutcome o = classify_litmus(shape, results[i], results[i + 1]);
    ++t.outcomes[static_cast<int>(o)];
    ++t.iterations;
    if (o == LitmusOutcome::kWeak) ++t.weak;
    if (o == LitmusOutcome::kInterleaved) ++t.overlapped;
    if (o == LitmusOutcome::kInvalid) ++t.invalid;
  }
}

void tally_counter(const unsigned long long counts[4], LitmusTally& t) {
  t.counter = true;
  t.iterations += counts[0] + counts[1] + counts[2] + counts[3];
  t.overlapped += counts[static_cast<int>(CounterSample::kOverlap)];
  t.weak += counts[static_cast<int>(CounterSample::kWeak)];
  t.invalid += counts[static_cast<int>(CounterSample::kInvalid)];
}

}  // namespace dcp
