#include "plan.h"

#include <algorithm>
#include <utility>

#include "mix.h"

namespace dcp {
namespace {

enum Tag : uint64_t {
  kTagSlots = 0xDC9C1001,
  kTagBatches,
  kTagSkewRanks,
  kTagSkewDelay,
  kTagGraphSet,
  kTagContexts,
  kTagInitFault
};

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
    case ExecMode::kGraphSet:  // split into one-call batches by plan_case
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

// The T of each call of a graph set. The first three calls on the slot with
// the most calls are T_max, T_min, T_max: a graph of T_max is replayed after
// the slot captured one of T_min (what a kernel that reads per-slot state the
// host wrote at capture time gets wrong). The others draw T uniformly, and
// every member of the set appears when there are calls enough.
std::vector<int> plan_graph_set_tokens(const Case& c, const std::vector<int>& slots) {
  const std::vector<int> set = graph_set_tokens(c);
  Rng rng(hash_all(c.seed, kTagGraphSet));
  std::vector<int> tokens(slots.size());
  for (int& t : tokens) t = set[static_cast<size_t>(rng.below(static_cast<int>(set.size())))];
  if (set.size() < 2) return tokens;
  const int busiest = std::count(slots.begin(), slots.end(), 1) >
                              std::count(slots.begin(), slots.end(), 0)
                          ? 1
                          : 0;
  std::vector<size_t> forced;
  for (size_t i = 0; i < slots.size() && forced.size() < 3; ++i) {
    if (slots[i] == busiest) forced.push_back(i);
  }
  if (forced.size() == 3) {
    tokens[forced[0]] = tokens[forced[2]] = set.back();
    tokens[forced[1]] = set.front();
  }
  std::vector<size_t> free_calls;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (std::find(forced.begin(), forced.end(), i) == forced.end()) free_calls.push_back(i);
  }
  for (int t : set) {
    if (std::find(tokens.begin(), tokens.end(), t) != tokens.end() || free_calls.empty()) continue;
    const size_t k = static_cast<size_t>(rng.below(static_cast<int>(free_calls.size())));
    tokens[free_calls[k]] = t;
    free_calls.erase(free_calls.begin() + static_cast<std::ptrdiff_t>(k));
  }
  return tokens;
}

}  // namespace

int num_ops(const Case& c) { return c.num_calls * c.num_layers; }

std::vector<int> contexts_of_ops(const Case& c) {
  const int n = num_ops(c);
  std::vector<int> ctx(static_cast<size_t>(std::max(n, 0)), 0);
  if (c.num_contexts < 2 || n < 1) return ctx;
  if (n == 1) return {1};
  Rng rng(hash_all(c.seed, kTagContexts));
  ctx[0] = rng.below(2);
  const int repeat = n >= 3 ? rng.between(2, n - 1) : -1;  // never op 1: both contexts appear
  for (int i = 1; i < n; ++i) ctx[i] = i == repeat ? ctx[i - 1] : ctx[i - 1] ^ 1;
  return ctx;
}

int init_fault_rank(const Case& c) {
  return Rng(hash_all(c.seed, kTagInitFault)).below(std::max(1, c.dcp_size));
}

std::vector<int> graph_set_tokens(const Case& c) {
  if (over_capacity(c)) return {c.num_tokens};
  std::vector<int> set;
  for (int t : {1, 8, c.num_tokens}) {
    const int clipped = std::clamp(t, 1, std::max(1, c.num_tokens));
    if (std::find(set.begin(), set.end(), clipped) == set.end()) set.push_back(clipped);
  }
  std::sort(set.begin(), set.end());
  return set;
}

int tokens_of_op(const Case& c, int op_idx) {
  if (c.mode != ExecMode::kGraphSet) return c.num_tokens;
  for (const PlannedBatch& b : plan_case(c, 0)) {
    for (const PlannedCall& call : b.calls) {
      if (call.op_idx == op_idx) return batch_case(c, b).num_tokens;
    }
  }
  return c.num_tokens;
}

Case batch_case(const Case& c, const PlannedBatch& batch) {
  Case k = c;
  if (batch.num_tokens > 0) k.num_tokens = batch.num_tokens;
  return k;
}

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
  const std::vector<int> contexts = contexts_of_ops(c);
  auto set_contexts = [&contexts](std::vector<PlannedBatch> planned) {
    for (PlannedBatch& b : planned) {
      for (PlannedCall& call : b.calls) call.context = contexts[static_cast<size_t>(call.op_idx)];
    }
    return planned;
  };
  if (c.mode == ExecMode::kGraphSet) {
    // One graph batch per call (its layers), each with the call's own T.
    const std::vector<int> tokens = plan_graph_set_tokens(c, slots);
    for (int call = 0; call < c.num_calls; ++call) {
      batches.push_back({ExecMode::kGraph, {}, tokens[static_cast<size_t>(call)]});
      call_ops(call, batches.back());
    }
    return set_contexts(std::move(batches));
  }
  for (const Segment& seg : plan_segments(c)) {
    if (seg.mode == ExecMode::kEager) {
      // One batch per call (its layers), host sync after each.
      for (int call = seg.first_call; call < seg.first_call + seg.num_calls; ++call) {
        batches.push_back({ExecMode::kEager, {}, c.num_tokens});
        call_ops(call, batches.back());
      }
      continue;
    }
    batches.push_back({seg.mode, {}, c.num_tokens});
    for (int call = seg.first_call; call < seg.first_call + seg.num_calls; ++call) {
      call_ops(call, batches.back());
    }
  }
  return set_contexts(std::move(batches));
}

}  // namespace dcp
