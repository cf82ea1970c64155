#include "suites.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "families.h"
#include "geometry.h"
#include "plan.h"
#include "random_case.h"

namespace dcp {
namespace {

// Axis values of a case, named as a user would (independent of suites.cpp).
std::string stride_class(const Case& c) {
  if (c.out_pad_elems == 0 && c.lse_pad_elems == 0) return "contig";
  if (c.lse_pad_elems == 0) return "padded-out";
  if (c.out_pad_elems == 0) return "padded-lse";
  return "padded-both";
}

std::map<std::string, std::string> main_axes(const Case& c) {
  return {
      {"dcp", std::to_string(c.dcp_size)},          {"out", std::string(to_string(c.out_dtype))},
      {"lse", std::string(to_string(c.lse_dtype))}, {"base", std::string(to_string(c.lse_base))},
      {"tokens", std::to_string(c.num_tokens)},     {"stride", stride_class(c)},
      {"empty", std::string(to_string(c.empty))},   {"mode", std::string(to_string(c.mode))},
      {"slots", std::to_string(c.num_slots)},
  };
}

const std::map<std::string, std::vector<std::string>>& expected_world4_kimi() {
  static const std::map<std::string, std::vector<std::string>> v = {
      {"dcp", {"4", "2"}},
      {"out", {"fp16", "bf16"}},
      {"lse", {"fp32", "fp16", "bf16"}},
      {"base", {"e", "2"}},
      {"tokens", {"1", "3", "5", "8", "17", "64", "100", "128"}},
      {"stride", {"contig", "padded-out", "padded-lse", "padded-both"}},
      {"empty", {"none", "one", "all", "random", "spec"}},
      {"mode", {"eager", "graph", "pipe", "mix"}},
      {"slots", {"1", "2"}},
  };
  return v;
}

// Returns "" when every value and every pair of values of the main axes
// appears among `cases` (restricted to `geometry`), else what is missing.
std::string missing_coverage(const std::vector<Case>& cases, const std::string& geometry) {
  std::set<std::string> singles, pairs;
  for (const Case& c : cases) {
    if (c.geometry.name != geometry) continue;
    const auto ax = main_axes(c);
    for (const auto& [a, va] : ax) {
      singles.insert(a + "=" + va);
      for (const auto& [b, vb] : ax) {
        if (a < b) pairs.insert(a + "=" + va + "," + b + "=" + vb);
      }
    }
  }
  const auto& want = expected_world4_kimi();
  for (const auto& [a, vals] : want) {
    for (const auto& va : vals) {
      if (!singles.count(a + "=" + va)) return "value " + a + "=" + va;
    }
  }
  for (const auto& [a, vals] : want) {
    for (const auto& va : vals) {
      for (const auto& [b, bvals] : want) {
        if (!(a < b)) continue;
        for (const auto& vb : bvals) {
          const std::string p = a + "=" + va + "," + b + "=" + vb;
          if (!pairs.count(p)) return "pair " + p;
        }
      }
    }
  }
  return "";
}

std::string missing_secondary(const std::vector<Case>& cases) {
  std::set<std::string> seen;
  for (const Case& c : cases) {
    seen.insert("special=" + std::string(to_string(c.special)));
    seen.insert(c.skew ? "skew" : "noskew");
    seen.insert(c.num_layers > 1 ? "layers" : "onelayer");
    if (c.epoch_start) {
      // The epoch must actually cross its edge (2^31 or 2^32) on every slot the
      // case uses.
      int ops[2] = {0, 0};
      for (const auto& b : plan_case(c, 0)) {
        for (const auto& pc : b.calls) ++ops[pc.slot];
      }
      const bool sign = *c.epoch_start < 0x80000000u;
      const uint64_t edge = sign ? 0x80000000ull : 0x100000000ull;
      const uint64_t left = edge - 1 - *c.epoch_start;  // ops before the edge
      bool crosses = true;
      for (int n : ops) crosses &= n == 0 || static_cast<uint64_t>(n) > left;
      seen.insert(!crosses ? "epoch-that-never-crosses" : sign ? "epoch2^31" : "epoch2^32");
      CHECK(crosses);
    }
  }
  for (const char* v :
       {"special=none", "special=equal", "special=hugegap", "special=posinf", "special=neginf",
        "special=nan", "skew", "noskew", "layers", "onelayer", "epoch2^31", "epoch2^32"}) {
    if (!seen.count(v)) return v;
  }
  return "";
}

TEST_CASE("default covers every value and every pair of the main axes (world 4, kimi)") {
  const auto cases = build_suite("default", {4, *find_geometry("kimi"), 0});
  MESSAGE("default suite, world 4, kimi: " << cases.size() << " cases");
  CHECK(cases.size() >= 80);
  CHECK(cases.size() <= 200);
  CHECK(missing_coverage(cases, "kimi") == "");
  // Within each group size too.
  for (int w : {4, 2}) {
    std::vector<Case> sub;
    for (const Case& c : cases) {
      if (c.dcp_size == w) sub.push_back(c);
    }
    const std::string miss = missing_coverage(sub, "kimi");
    CHECK_MESSAGE(miss == (w == 4 ? "value dcp=2" : "value dcp=4"), miss);
  }
  CHECK(missing_secondary(cases) == "");
}

TEST_CASE("the coverage check fails when an axis value is missing") {
  auto cases = build_suite("default", {4, *find_geometry("kimi"), 0});
  auto without = cases;
  std::erase_if(without, [](const Case& c) { return c.empty == EmptyPattern::kSpec; });
  CHECK(missing_coverage(without, "kimi") == "value empty=spec");
  auto no_pair = cases;
  std::erase_if(no_pair, [](const Case& c) {
    return c.mode == ExecMode::kGraph && c.out_pad_elems > 0 && c.lse_pad_elems == 0;
  });
  CHECK(missing_coverage(no_pair, "kimi").find("pair") == 0);
  auto no_epoch = cases;
  for (Case& c : no_epoch) c.epoch_start.reset();
  CHECK(missing_secondary(no_epoch) == "epoch2^31");
  auto no_sign_bit = cases;
  for (Case& c : no_sign_bit) {
    if (c.epoch_start && *c.epoch_start < 0x80000000u) c.epoch_start.reset();
  }
  CHECK(missing_secondary(no_sign_bit) == "epoch2^31");
}

TEST_CASE("suite sizes and determinism") {
  for (int world : {2, 4, 8}) {
    for (const char* geo : {"kimi", "kimi-k3", "deepseek", "tiny"}) {
      const SuiteOptions opts{world, *find_geometry(geo), 0};
      const auto a = build_suite("default", opts);
      CHECK(a == build_suite("default", opts));
      MESSAGE("default world " << world << " " << std::string(geo) << ": " << a.size() << " cases");
      // Seconds on one GPU (about 20 ms per case at world 4 with MPS): the
      // pairwise rows plus the families (capacity, producer, graph-set,
      // pressure, reuse, two contexts) per group size.
      CHECK(a.size() <= 270);
      std::set<std::string> ids;
      for (const Case& c : a) ids.insert(format_case_id(c));
      CHECK(ids.size() == a.size());  // no duplicates
      int capacity_cases = 0;
      for (const Case& c : a) {
        CHECK(world % c.dcp_size == 0);
        CHECK(c.num_tokens <= c.geometry.max_tokens + 1);
        capacity_cases += over_capacity(c) ? 1 : 0;
        CHECK(c.out_pad_elems % 8 == 0);
      }
      // Two per group size: T = max_tokens + 1, which every rank must refuse.
      CHECK(capacity_cases == 2 * static_cast<int>(dcp_sizes_for_world(world).size()));
    }
  }
  // --seed changes the data, not the structure.
  const auto s0 = build_suite("default", {4, *find_geometry("kimi"), 0});
  const auto s1 = build_suite("default", {4, *find_geometry("kimi"), 1});
  REQUIRE(s0.size() == s1.size());
  CHECK(s0[0].seed != s1[0].seed);
  Case a = s0[0], b = s1[0];
  a.seed = b.seed = 0;
  CHECK(a == b);
}

TEST_CASE("default holds the producer cases: slow and PDL, T <= 2, eager, pipelined, graph") {
  for (int world : {2, 4, 8}) {
    const auto def = build_suite("default", {world, *find_geometry("kimi"), 0});
    for (int w : dcp_sizes_for_world(world)) {
      std::set<std::string> shapes;
      for (const Case& c : def) {
        if (c.dcp_size != w || c.producer == Producer::kDefault) continue;
        CHECK(c.num_tokens <= 2);
        shapes.insert(fmt::format("{}-{}", to_string(c.producer), to_string(c.mode)));
      }
      CAPTURE(w);
      for (const char* s : {"slow-eager", "slow-graph", "pdl-eager", "pdl-pipe", "pdl-graph"}) {
        CHECK_MESSAGE(shapes.count(s) == 1, s);
      }
    }
  }
  // stress draws the axis now and then.
  int slow = 0, pdl = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    const Case c = random_case(7, i, 4, *find_geometry("kimi"));
    slow += c.producer == Producer::kSlow ? 1 : 0;
    pdl += c.producer == Producer::kSlowPdl ? 1 : 0;
  }
  CHECK(slow > 10);
  CHECK(pdl > 10);
  CHECK(slow + pdl < 200);
}

TEST_CASE("stress draws SM pressure now and then, on two-slot eager or pipelined cases only") {
  int pressed = 0;
  for (uint64_t i = 0; i < 4000; ++i) {
    const Case c = random_case(11, i, 4, *find_geometry("kimi"));
    if (c.pressure == 0) continue;
    ++pressed;
    CHECK(pressure_allowed(c.mode));
    CHECK(c.num_slots == 2);
    CHECK((c.pressure == 50 || c.pressure == 90));
    CHECK(parse_case_id(format_case_id(c), nullptr) == c);
  }
  CHECK(pressed > 2);
  CHECK(pressed < 80);
}

TEST_CASE("the pressure suite: two slots at 90% (pipelined) and 50% (eager), every group size") {
  for (int world : {2, 4, 8}) {
    const Geometry g = *find_geometry("kimi");
    std::set<std::string> shapes;
    for (const std::string suite : {"smoke", "upstream"}) {
      for (const Case& c : build_suite(suite, {world, g, 0})) CHECK(c.pressure == 0);
    }
    const std::vector<Case> alone = build_suite("pressure", {world, g, 0});
    for (const std::string suite : {"default", "full"}) {  // hold the family too
      std::vector<Case> pressed;
      for (const Case& c : build_suite(suite, {world, g, 0})) {
        if (c.pressure > 0) pressed.push_back(c);
      }
      CHECK(pressed == alone);
    }
    for (const Case& c : alone) {
      CHECK(c.pressure > 0);
      CHECK(pressure_allowed(c.mode));
      CHECK(c.num_slots == 2);
      shapes.insert(fmt::format("{}/{}/{}", c.dcp_size, c.pressure, to_string(c.mode)));
    }
    for (int w : dcp_sizes_for_world(world)) {
      CHECK(shapes.count(fmt::format("{}/90/pipe", w)) == 1);
      CHECK(shapes.count(fmt::format("{}/50/eager", w)) == 1);
    }
  }
}

TEST_CASE("default holds the graph-set family: every group size, both slot counts, max and mid T") {
  for (int world : {2, 4, 8}) {
    for (const char* geo : {"kimi", "tiny"}) {
      const Geometry g = *find_geometry(geo);
      std::set<std::string> shapes;
      for (const Case& c : build_suite("default", {world, g, 0})) {
        if (c.mode != ExecMode::kGraphSet) continue;
        CHECK(graph_set_tokens(c).size() == 3u);
        CHECK(c.num_calls >= 5);  // the busiest slot has three calls
        shapes.insert(fmt::format("{}/{}/{}", c.dcp_size, c.num_slots, c.num_tokens));
        CHECK(c.churn == (c.num_slots == 2));  // the two-slot ones churn allocations
      }
      for (int w : dcp_sizes_for_world(world)) {
        for (int slots : {1, 2}) {
          for (int t : {g.max_tokens, 17}) {
            CHECK_MESSAGE(shapes.count(fmt::format("{}/{}/{}", w, slots, t)) == 1,
                          geo << " w" << w << " ub" << slots << " t" << t);
          }
        }
      }
    }
  }
}

TEST_CASE("upstream cases are all in default, as specified") {
  for (int world : {2, 4}) {
    for (const char* geo : {"kimi", "tiny", "kimi-k3"}) {
      const SuiteOptions opts{world, *find_geometry(geo), 3};
      const auto def = build_suite("default", opts);
      const auto up = build_suite("upstream", opts);
      CHECK(up.size() == 8 * dcp_sizes_for_world(world).size());
      for (const Case& u : up) {
        CAPTURE(format_case_id(u));
        CHECK(std::find(def.begin(), def.end(), u) != def.end());
        CHECK(u.geometry.name == "kimi-k3");
        CHECK(u.mode == ExecMode::kGraph);
        CHECK(u.num_calls == 3);
      }
      std::set<std::string> shapes;
      for (const Case& u : up) {
        shapes.insert(std::to_string(u.num_tokens) + (u.out_pad_elems ? "p" : "c") +
                      std::string(to_string(u.empty)) + std::string(to_string(u.out_dtype)) +
                      std::string(to_string(u.lse_base)));
        if (u.out_pad_elems) {
          // 128-head backing storage viewed as W*6 heads.
          CHECK(u.out_token_stride() == 128 * 512);
          CHECK(u.lse_token_stride() == 128);
        }
      }
      for (const char* s :
           {"1cnone", "17cnone", "5pnone", "128pnone", "1cone", "17cone", "5pone", "128pone"}) {
        bool found = false;
        for (const auto& x : shapes) found |= x.starts_with(s);
        CHECK_MESSAGE(found, s);
      }
    }
  }
}

TEST_CASE("default and full hold the input-reuse family: eager, pipelined, graph, small and max T") {
  for (int world : {2, 4, 8}) {
    for (const char* geo : {"kimi", "tiny"}) {
      const Geometry g = *find_geometry(geo);
      for (const char* suite : {"default", "full"}) {
        std::set<std::string> shapes;
        for (const Case& c : build_suite(suite, {world, g, 0})) {
          if (!c.reuse) continue;
          CHECK(c.skew);  // a late rank's combine ends before its own sends
          CHECK(c.producer == Producer::kDefault);
          CHECK(c.pressure == 0);
          shapes.insert(fmt::format("{}/{}/{}/{}", c.dcp_size, to_string(c.mode), c.num_slots,
                                    c.num_tokens == g.max_tokens ? "max" : "small"));
        }
        for (int w : dcp_sizes_for_world(world)) {
          for (const char* s : {"eager/1/small", "eager/2/max", "pipe/2/max", "pipe/1/small",
                                "graph/2/small", "graph/1/max"}) {
            CHECK_MESSAGE(shapes.count(fmt::format("{}/{}", w, s)) == 1,
                          suite << " " << geo << " w" << w << " " << s);
          }
        }
      }
    }
  }
  for (const std::string suite : {"smoke", "upstream", "pressure"}) {
    for (const Case& c : build_suite(suite, {4, *find_geometry("kimi"), 0})) CHECK_FALSE(c.reuse);
  }
  // stress draws it now and then (5%), last of all axes.
  int reuse = 0;
  for (uint64_t i = 0; i < 2000; ++i) reuse += random_case(7, i, 4, *find_geometry("kimi")).reuse;
  CHECK(reuse > 50);
  CHECK(reuse < 200);
}

TEST_CASE("smoke, full and dcp sizes") {
  CHECK(dcp_sizes_for_world(4) == std::vector<int>{4, 2});
  CHECK(dcp_sizes_for_world(8) == std::vector<int>{8, 4, 2});
  CHECK(dcp_sizes_for_world(6) == std::vector<int>{6, 3, 2});
  CHECK(dcp_sizes_for_world(1).empty());
  const auto smoke = build_suite("smoke", {4, *find_geometry("kimi"), 0});
  CHECK(smoke.size() >= 4);
  CHECK(smoke.size() <= 8);
  const auto full = build_suite("full", {2, *find_geometry("tiny"), 0});
  // tiny: 6 token counts; plus the capacity family (2 cases per group size),
  // the producer cases (5 per group size), the graph-set family (T 32 and
  // 17, one and two slots), the input-reuse family (6 per group size) and the
  // two-contexts family (4 per group size), the sm-pressure family (3) and
  // the init-faults family (4).
  CHECK(full.size() == 1u * 2 * 3 * 2 * 6 * 4 * 5 * 4 * 2 + 2 + 5 + 4 + 3 + 6 + 4 + 4);
  CHECK_THROWS_AS(build_suite("nope", {2, *find_geometry("tiny"), 0}), std::invalid_argument);
}

TEST_CASE("default and full hold the init-faults cases: fail and late, eager, pipelined, graph") {
  for (const std::string suite : {"default", "full"}) {
    const auto cases = build_suite(suite, {4, *find_geometry("kimi"), 0});
    for (int w : {2, 4}) {
      std::set<std::tuple<InitFault, ExecMode, int>> seen;
      for (const Case& c : cases) {
        if (c.dcp_size != w || c.init_fault == InitFault::kNone) continue;
        const int late = suite == "default" ? 100 : 2000;
        CHECK(c.init_late_ms == (c.init_fault == InitFault::kLate ? late : 0));
        seen.insert({c.init_fault, c.mode, c.num_slots});
      }
      CHECK(seen.size() == 4);
      CHECK(seen.count({InitFault::kFail, ExecMode::kEager, 1}) == 1);
      CHECK(seen.count({InitFault::kFail, ExecMode::kPipelined, 2}) == 1);
      CHECK(seen.count({InitFault::kLate, ExecMode::kPipelined, 2}) == 1);
      CHECK(seen.count({InitFault::kLate, ExecMode::kGraph, 1}) == 1);
    }
  }
}

TEST_CASE("default and full hold the two-contexts cases: eager, pipelined, graph, 1 and 2 slots") {
  for (const char* suite : {"default", "full"}) {
    for (int world : {2, 4}) {
      const auto cases = build_suite(suite, {world, *find_geometry("tiny"), 0});
      for (int w : dcp_sizes_for_world(world)) {
        std::set<std::string> shapes;
        for (const Case& c : cases) {
          if (c.dcp_size != w || c.num_contexts != 2) continue;
          shapes.insert(fmt::format("{}-ub{}", to_string(c.mode), c.num_slots));
          bool member = false;
          for (const CaseFamily& f : case_families()) {
            member |= f.name == "two-contexts" && f.member(c);
          }
          CHECK(member);
        }
        CAPTURE(suite);
        CAPTURE(w);
        for (const char* s : {"eager-ub1", "pipe-ub1", "pipe-ub2", "graph-ub2"}) {
          CHECK_MESSAGE(shapes.count(s) == 1, s);
        }
      }
    }
  }
  // stress draws the axis now and then.
  int two = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    two += random_case(7, i, 4, *find_geometry("kimi")).num_contexts == 2 ? 1 : 0;
  }
  CHECK(two > 40);
  CHECK(two < 200);
}

}  // namespace
}  // namespace dcp
