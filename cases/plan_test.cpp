#include "plan.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "geometry.h"
#include "random_case.h"
#include "shrink.h"

namespace dcp {
namespace {

Case base_case(ExecMode m, int calls, int layers = 1, int slots = 1) {
  Case c;
  c.dcp_size = 4;
  c.geometry = *find_geometry("tiny");
  c.mode = m;
  c.num_calls = calls;
  c.num_layers = layers;
  c.num_slots = slots;
  c.seed = 0x5eed;
  return c;
}

std::vector<int> op_order(const std::vector<PlannedBatch>& plan) {
  std::vector<int> ops;
  for (const auto& b : plan) {
    for (const auto& pc : b.calls) ops.push_back(pc.op_idx);
  }
  return ops;
}

void check_ops_consecutive(const Case& c, const std::vector<PlannedBatch>& plan) {
  const auto ops = op_order(plan);
  REQUIRE(ops.size() == static_cast<size_t>(num_ops(c)));
  for (size_t i = 0; i < ops.size(); ++i) CHECK(ops[i] == static_cast<int>(i));
  for (const auto& b : plan) CHECK(b.mode != ExecMode::kMixed);
}

TEST_CASE("modes") {
  auto eager = plan_case(base_case(ExecMode::kEager, 3), 0);
  CHECK(eager.size() == 3u);
  for (const auto& b : eager) CHECK(b.calls.size() == 1u);
  auto graph = plan_case(base_case(ExecMode::kGraph, 4), 0);
  REQUIRE(graph.size() == 1u);
  CHECK(graph[0].mode == ExecMode::kGraph);
  CHECK(graph[0].calls.size() == 4u);
  auto pipe = plan_case(base_case(ExecMode::kPipelined, 5, 2), 0);
  REQUIRE(pipe.size() == 1u);
  CHECK(pipe[0].mode == ExecMode::kPipelined);
  check_ops_consecutive(base_case(ExecMode::kPipelined, 5, 2), pipe);
  // Layers: each call's L ops are consecutive and share a slot.
  const Case layered = base_case(ExecMode::kEager, 3, 3, 2);
  const auto lp = plan_case(layered, 0);
  CHECK(lp.size() == 3u);
  for (const auto& b : lp) {
    REQUIRE(b.calls.size() == 3u);
    CHECK(b.calls[0].slot == b.calls[2].slot);
  }
  check_ops_consecutive(layered, lp);
}

TEST_CASE("mixed plans split into several modes") {
  std::set<int> modes_seen;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    Case c = base_case(ExecMode::kMixed, 8, 2);
    c.seed = seed;
    const auto plan = plan_case(c, 0);
    check_ops_consecutive(c, plan);
    std::set<int> modes;
    for (const auto& b : plan) modes.insert(static_cast<int>(b.mode));
    CHECK(modes.size() >= 2);
    modes_seen.insert(modes.begin(), modes.end());
  }
  CHECK(modes_seen.size() == 3u);
}

TEST_CASE("slots are identical on every rank and both are used") {
  for (uint64_t seed = 0; seed < 100; ++seed) {
    Case c = base_case(seed % 2 ? ExecMode::kGraph : ExecMode::kMixed, 2 + seed % 5, 1, 2);
    c.seed = seed;
    c.skew = true;
    std::vector<std::vector<int>> slots_by_rank;
    for (int r = 0; r < c.dcp_size; ++r) {
      std::vector<int> slots;
      const auto plan = plan_case(c, r);
      for (const auto& b : plan) {
        for (const auto& pc : b.calls) slots.push_back(pc.slot);
      }
      slots_by_rank.push_back(slots);
      CHECK(op_order(plan) == op_order(plan_case(c, 0)));
    }
    for (const auto& s : slots_by_rank) CHECK(s == slots_by_rank[0]);
    CHECK(std::set<int>(slots_by_rank[0].begin(), slots_by_rank[0].end()).size() == 2u);
  }
  for (const auto& b : plan_case(base_case(ExecMode::kGraph, 4), 1)) {
    for (const auto& pc : b.calls) CHECK(pc.slot == 0);
  }
}

TEST_CASE("skew: bounded, on some ranks only, zero when off") {
  int skewed_ranks_total = 0, unskewed_ranks_total = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Case c = base_case(ExecMode::kPipelined, 6);
    c.seed = seed;
    c.skew = true;
    int skewed = 0;
    for (int r = 0; r < c.dcp_size; ++r) {
      uint32_t max_ns = 0;
      for (const auto& b : plan_case(c, r)) {
        for (const auto& pc : b.calls) {
          CHECK(pc.skew_ns <= 200'000u);
          max_ns = std::max(max_ns, pc.skew_ns);
        }
      }
      skewed += max_ns > 0;
    }
    CHECK(skewed >= 1);
    skewed_ranks_total += skewed;
    unskewed_ranks_total += c.dcp_size - skewed;
    c.skew = false;
    for (int r = 0; r < c.dcp_size; ++r) {
      for (const auto& b : plan_case(c, r)) {
        for (const auto& pc : b.calls) CHECK(pc.skew_ns == 0u);
      }
    }
  }
  CHECK(skewed_ranks_total > 0);
  CHECK(unskewed_ranks_total > 0);
}

TEST_CASE("shrinking terminates and every candidate is strictly simpler and valid") {
  for (uint64_t i = 0; i < 300; ++i) {
    Case c = random_case(11, i, 8, *find_geometry("kimi-k3"));
    int steps = 0;
    while (true) {
      const auto cands = shrink_candidates(c);
      for (const Case& k : cands) {
        CHECK(shrink_measure(k) < shrink_measure(c));
        std::string err;
        CHECK_MESSAGE(parse_case_id(format_case_id(k), &err).has_value(), err);
        CHECK(8 % k.dcp_size == 0);
      }
      if (cands.empty()) break;
      c = cands[i % cands.size()];  // any path must terminate
      REQUIRE(++steps < 1000);
    }
    // Fully shrunk: the simplest case.
    CHECK(c.num_tokens == 1);
    CHECK(c.num_calls == 1);
    CHECK(c.mode == ExecMode::kEager);
    CHECK(c.dcp_size == 2);
    CHECK(c.out_pad_elems == 0);
    CHECK_FALSE(c.skew);
  }
}

TEST_CASE("shrink order: fewer tokens first") {
  Case c = base_case(ExecMode::kGraph, 4, 2, 2);
  c.num_tokens = 17;
  c.skew = true;
  const auto cands = shrink_candidates(c);
  REQUIRE(cands.size() >= 2);
  CHECK(cands[0].num_tokens == 8);
  CHECK(cands[1].num_tokens == 16);
  CHECK(cands[2].num_calls == 2);
}

TEST_CASE("random cases span the axes") {
  std::set<int> modes, empties, specials, dcp, slots;
  bool epoch = false, skew = false, layers = false, big = false, one = false;
  for (uint64_t i = 0; i < 400; ++i) {
    const Case c = random_case(1, i, 8, *find_geometry("kimi"));
    CHECK(c == random_case(1, i, 8, *find_geometry("kimi")));
    modes.insert(static_cast<int>(c.mode));
    empties.insert(static_cast<int>(c.empty));
    specials.insert(static_cast<int>(c.special));
    dcp.insert(c.dcp_size);
    slots.insert(c.num_slots);
    epoch |= c.epoch_start.has_value();
    skew |= c.skew;
    layers |= c.num_layers > 1;
    big |= c.num_tokens == 128;
    one |= c.num_tokens == 1;
  }
  CHECK(modes.size() == 5u);  // graph sets too
  CHECK(empties.size() == 5u);
  CHECK(specials.size() == 6u);
  CHECK(dcp.size() == 3u);
  CHECK(slots.size() == 2u);
  CHECK((epoch && skew && layers && big && one));
  CHECK_THROWS(random_case(1, 0, 1, *find_geometry("kimi")));
}

TEST_CASE("graph-set token counts: 1, 8 and T, clipped and de-duplicated") {
  Case c = base_case(ExecMode::kGraphSet, 8);
  auto set_for = [&](int t) {
    c.num_tokens = t;
    return graph_set_tokens(c);
  };
  CHECK(set_for(32) == std::vector<int>{1, 8, 32});
  CHECK(set_for(17) == std::vector<int>{1, 8, 17});
  CHECK(set_for(8) == std::vector<int>{1, 8});
  CHECK(set_for(5) == std::vector<int>{1, 5});
  CHECK(set_for(1) == std::vector<int>{1});
  CHECK(set_for(33) == std::vector<int>{33});  // a capacity case: every call refused
}

TEST_CASE("graph-set plans: one graph call per batch, T from the set, deterministic") {
  for (int slots : {1, 2}) {
    for (uint64_t seed : {1ull, 2ull, 0x5eedull, 0xabcdefull}) {
      CAPTURE(slots);
      CAPTURE(seed);
      Case c = base_case(ExecMode::kGraphSet, 8, 2, slots);
      c.num_tokens = 17;
      c.seed = seed;
      const auto plan = plan_case(c, 0);
      check_ops_consecutive(c, plan);
      REQUIRE(plan.size() == 8u);
      const std::vector<int> set = graph_set_tokens(c);
      std::set<int> seen;
      std::vector<std::pair<int, int>> slot_tokens;  // (slot, T) per call
      for (const PlannedBatch& b : plan) {
        CHECK(b.mode == ExecMode::kGraph);
        REQUIRE(b.calls.size() == 2u);  // the call's two layers
        CHECK(b.calls[0].slot == b.calls[1].slot);
        CHECK(std::find(set.begin(), set.end(), b.num_tokens) != set.end());
        CHECK(batch_case(c, b).num_tokens == b.num_tokens);
        seen.insert(b.num_tokens);
        slot_tokens.emplace_back(b.calls[0].slot, b.num_tokens);
      }
      CHECK(seen.size() == set.size());  // every graph of the set is captured
      // The busiest slot's first three calls: T_max, T_min, T_max.
      std::vector<int> on_busiest[2];
      for (auto [slot, t] : slot_tokens) on_busiest[slot].push_back(t);
      const auto& busy = on_busiest[on_busiest[1].size() > on_busiest[0].size() ? 1 : 0];
      REQUIRE(busy.size() >= 3u);
      CHECK(busy[0] == 17);
      CHECK(busy[1] == 1);
      CHECK(busy[2] == 17);
      // Identical on every rank and on every plan of the same case.
      for (int rank = 1; rank < c.dcp_size; ++rank) {
        const auto other = plan_case(c, rank);
        REQUIRE(other.size() == plan.size());
        for (size_t i = 0; i < plan.size(); ++i) {
          CHECK(other[i].num_tokens == plan[i].num_tokens);
          CHECK(other[i].calls[0].slot == plan[i].calls[0].slot);
        }
      }
      for (const PlannedBatch& b : plan) {
        for (const PlannedCall& pc : b.calls) CHECK(tokens_of_op(c, pc.op_idx) == b.num_tokens);
      }
      const auto again = plan_case(c, 0);
      for (size_t i = 0; i < plan.size(); ++i) CHECK(again[i].num_tokens == plan[i].num_tokens);
    }
  }
  // Other modes: every batch has the case's T.
  for (const PlannedBatch& b : plan_case(base_case(ExecMode::kMixed, 6), 0)) {
    CHECK(b.num_tokens == 1);
  }
}

TEST_CASE("a graph set shrinks to one graph per slot") {
  Case c = base_case(ExecMode::kGraphSet, 8);
  c.num_tokens = 17;
  bool to_graph = false, to_eager = false;
  for (const Case& k : shrink_candidates(c)) {
    to_graph |= k.mode == ExecMode::kGraph && k.num_calls == 8;
    to_eager |= k.mode == ExecMode::kEager;
  }
  CHECK(to_graph);
  CHECK(to_eager);
  c.churn = true;
  bool no_churn = false;
  for (const Case& k : shrink_candidates(c)) no_churn |= !k.churn && k.mode == c.mode;
  CHECK(no_churn);
}

TEST_CASE("two contexts: seeded per op, the same on every rank, both used, runs of both kinds") {
  CHECK(contexts_of_ops(base_case(ExecMode::kEager, 5)) == std::vector<int>(5, 0));
  for (uint64_t seed = 0; seed < 64; ++seed) {
    for (auto [calls, layers] : {std::pair{1, 1}, {2, 1}, {3, 1}, {4, 2}, {8, 1}}) {
      Case c = base_case(ExecMode::kPipelined, calls, layers, 2);
      c.num_contexts = 2;
      c.seed = seed;
      const std::vector<int> ctx = contexts_of_ops(c);
      REQUIRE(ctx.size() == static_cast<size_t>(num_ops(c)));
      CHECK(std::count(ctx.begin(), ctx.end(), 1) >= 1);  // the second context is always called
      if (ctx.size() >= 2) CHECK(std::count(ctx.begin(), ctx.end(), 0) >= 1);
      int repeats = 0, switches = 0;
      for (size_t i = 1; i < ctx.size(); ++i) (ctx[i] == ctx[i - 1] ? repeats : switches) += 1;
      CHECK(switches >= (ctx.size() >= 2 ? 1 : 0));
      CHECK(repeats == (ctx.size() >= 3 ? 1 : 0));  // one back-to-back pair, else alternating
      for (int rank = 0; rank < c.dcp_size; ++rank) {
        for (const PlannedBatch& b : plan_case(c, rank)) {
          for (const PlannedCall& pc : b.calls) CHECK(pc.context == ctx[pc.op_idx]);
        }
      }
    }
  }
  Case g = base_case(ExecMode::kGraphSet, 6);
  g.num_tokens = 17;
  g.num_contexts = 2;
  std::set<int> seen;
  for (const PlannedBatch& b : plan_case(g, 0)) {
    for (const PlannedCall& pc : b.calls) seen.insert(pc.context);
  }
  CHECK(seen == std::set<int>{0, 1});
}

}  // namespace
}  // namespace dcp
