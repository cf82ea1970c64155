#include "plan.h"

#include <algorithm>

#include "mix.h"

namespace dcp {
namespace {

enum Tag : uint64_t { kTagSlots = 0xDC9C1001, kTagBatches, kTagSkewRanks, kTagSkewDelay };

constexpr uint32_t kMaxSkewNs = 200'000;

// Slot of each call. Drawn without the rank, so every rank of the group uses
// the same slot sequence (otherwise flags of different slots would meet).
std::vector<int> plan_slots(const Case& c) {
  std::vector<int> slots(static_cast<size_t>(c.num_calls), 0);
  if (c.num_slots < 2) return slots;
  Rng rng(hash_all(c.seed, kTagSlots));
  for (int& s : slots) s = rng.below(2);
  // Both slots must appear whenever there are two calls to put them in.
  if (c.num_calls >= 2 &&
      std::all_of(slots.begin(), slots.end(), [&](int s) { return s == slots[0]; })) {
    slots[static_cast<size_t>(rng.below(c.num_calls))] ^= 1;
  }
  return slots;
}

struct Segment {
  ExecMode mode;
  int first_call;
  int num_calls;
};

std::vector<Segment> plan_segments(const Case& c) {
  const int n = c.num_calls;
  switch (c.mode) {
    case ExecMode::kEager:
      return {{ExecMode::kEager, 0, n}};
    case ExecMode::kGraph:
    case ExecMode::kPipelined:
      return {{c.mode, 0, n}};
    case ExecMode::kMixed:
      break;
  }
  // Mixed: consecutive runs of 1-4 calls, each with a random mode; when there
  // are several runs, at least two modes differ.
  constexpr ExecMode kChoices[3] = {ExecMode::kEager, ExecMode::kGraph, ExecMode::kPipelined};
  Rng rng(hash_all(c.seed, kTagBatches));
  std::vector<Segment> segs;
  for (int i = 0; i < n;) {
    const int len = rng.between(1, std::min(4, n - i));
    segs.push_back({kChoices[rng.below(3)], i, len});
    i += len;
  }
  if (segs.size() >= 2 && segs[1].mode == segs[0].mode) {
    segs[1].mode = kChoices[(static_cast<int>(segs[0].mode) + 1 + rng.below(2)) % 3];
  }
  return segs;
}

}  // namespace

int num_ops(const Case& c) { return c.num_calls * c.num_layers; }

std::vector<PlannedBatch> plan_case(const Case& c, int group_rank) {
  const std::vector<int> slots = plan_slots(c);
  // Skew: some ranks (at least one, from the seed) sleep 0-200 us before each
  // op; the others start at once, so arrivals are staggered.
  const bool skewed =
      c.skew && (group_rank == Rng(hash_all(c.seed, kTagSkewRanks)).below(c.dcp_size) ||
                 (hash_all(c.seed, kTagSkewRanks, group_rank) & 1));
  auto call_ops = [&](int call, PlannedBatch& batch) {
    for (int layer = 0; layer < c.num_layers; ++layer) {
      PlannedCall pc;
      pc.op_idx = call * c.num_layers + layer;
      pc.slot = slots[static_cast<size_t>(call)];  // every layer of a call shares its slot
      if (skewed) {
        pc.skew_ns = static_cast<uint32_t>(hash_all(c.seed, kTagSkewDelay, group_rank, pc.op_idx) %
                                           (kMaxSkewNs + 1));
      }
      batch.calls.push_back(pc);
    }
  };
  std::vector<PlannedBatch> batches;
  for (const Segment& seg : plan_segments(c)) {
    if (seg.mode == ExecMode::kEager) {
      // One batch per call (its layers), host sync after each.
      for (int call = seg.first_call; call < seg.first_call + seg.num_calls; ++call) {
        batches.push_back({ExecMode::kEager, {}});
        call_ops(call, batches.back());
      }
      continue;
    }
    batches.push_back({seg.mode, {}});
    for (int call = seg.first_call; call < seg.first_call + seg.num_calls; ++call) {
      call_ops(call, batches.back());
    }
  }
  return batches;
}

}  // namespace dcp
