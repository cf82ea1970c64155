#include "case.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

#include "geometry.h"
#include "random_case.h"
#include "suites.h"

namespace dcp {
namespace {

Case example() {
  Case c;
  c.dcp_size = 4;
  c.geometry = *find_geometry("kimi");
  c.out_dtype = DType::kBf16;
  c.lse_dtype = DType::kFp32;
  c.lse_base = LseBase::k2;
  c.num_tokens = 17;
  c.out_pad_elems = 64;
  c.empty = EmptyPattern::kOne;
  c.num_slots = 2;
  c.mode = ExecMode::kGraph;
  c.num_calls = 4;
  c.seed = 0x1a2b3c;
  return c;
}

// The error for an unknown optional token `bad` just before the seed;
// checks that parsing fails and that the error names the token.
std::string rejected_token(const char* bad) {
  std::string err;
  const std::string id =
      fmt::format("dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-{}-s1a2b3c", bad);
  CAPTURE(id);
  CHECK_FALSE(parse_case_id(id, &err).has_value());
  CHECK_MESSAGE(err.find(fmt::format("'{}'", bad)) != std::string::npos, err);
  return err;
}

void check_round_trip(const Case& c) {
  const std::string id = format_case_id(c);
  std::string err;
  const auto back = parse_case_id(id, &err);
  REQUIRE_MESSAGE(back.has_value(), err);
  CHECK(*back == c);
  CHECK(format_case_id(*back) == id);
}

TEST_CASE("the documented example id") {
  CHECK(format_case_id(example()) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-graph4-s1a2b3c");
  check_round_trip(example());
}

TEST_CASE("optional tokens and every enum value round trip") {
  Case c = example();
  c.special = SpecialLse::kHugeGap;
  c.num_layers = 3;
  c.skew = true;
  c.epoch_start = 0xFFFFFFFDu;
  c.lse_pad_elems = 3;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x3-emptyone-specialhugegap-ub2-graph4-l3-skew"
        "-epfffffffd-s1a2b3c");
  check_round_trip(c);
  for (auto m : {ExecMode::kEager, ExecMode::kGraph, ExecMode::kPipelined, ExecMode::kMixed,
                 ExecMode::kGraphSet}) {
    for (auto e : {EmptyPattern::kNone, EmptyPattern::kOne, EmptyPattern::kAll,
                   EmptyPattern::kRandom, EmptyPattern::kSpec}) {
      for (auto s : {SpecialLse::kNone, SpecialLse::kEqual, SpecialLse::kHugeGap,
                     SpecialLse::kPosInf, SpecialLse::kNegInf, SpecialLse::kNan}) {
        c.mode = m;
        c.empty = e;
        c.special = s;
        check_round_trip(c);
      }
    }
  }
  c.epoch_start = 0;
  check_round_trip(c);
  c.seed = 0xFFFFFFFFFFFFFFFFull;
  check_round_trip(c);
}

TEST_CASE("the producer token: optional, after the epoch, round trips") {
  Case c = example();
  c.producer = Producer::kSlow;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-graph4-prodslow-s1a2b3c");
  check_round_trip(c);
  c.producer = Producer::kSlowPdl;
  c.epoch_start = 0x7FFFFFFDu;
  c.skew = true;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-graph4-skew-ep7ffffffd-prodpdl"
        "-s1a2b3c");
  check_round_trip(c);
  c.producer = Producer::kDefault;
  CHECK(format_case_id(c).find("prod") == std::string::npos);  // the default has no token
  for (const char* bad : {"prodfast", "proddefault", "prod"}) {
    CHECK(rejected_token(bad).find("prodslow|prodpdl") != std::string::npos);
  }
  std::string err;  // the token's place is after the epoch, before the seed
  CHECK_FALSE(parse_case_id(
                  "dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-prodpdl-skew-s1a2b3c",
                  &err)
                  .has_value());
}

TEST_CASE("graph sets: graphs<N> next to graph<N>") {
  Case c = example();
  c.mode = ExecMode::kGraphSet;
  c.num_calls = 8;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-graphs8-s1a2b3c");
  check_round_trip(c);
  std::string err;
  const std::string head = "dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptynone-ub1-";
  const auto g = parse_case_id(head + "graph8-s000001", &err);
  REQUIRE(g.has_value());
  CHECK(g->mode == ExecMode::kGraph);
  CHECK_FALSE(parse_case_id(head + "graphs-s000001", &err));
  CHECK(err.find("graphs<N>") != std::string::npos);
  c.skew = true;
  c.churn = true;
  c.epoch_start = 0x7FFFFFFDu;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-graphs8-skew-churn-ep7ffffffd"
        "-s1a2b3c");
  check_round_trip(c);
}

TEST_CASE("SM pressure: -press<pct>, eager or pipelined only") {
  Case c = example();
  c.mode = ExecMode::kPipelined;
  c.num_calls = 8;
  c.skew = true;
  c.pressure = 90;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-pipe8-skew-press90-s1a2b3c");
  check_round_trip(c);
  std::string err;
  const std::string head = "dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptynone-ub2-";
  CHECK_FALSE(parse_case_id(head + "graph4-press90-s000001", &err));
  CHECK(err.find("needs eager or pipelined") != std::string::npos);
  CHECK_FALSE(parse_case_id(head + "eager2-press96-s000001", &err));
  CHECK(err.find("[1, 95]") != std::string::npos);
  CHECK_FALSE(parse_case_id(head + "eager2-press-s000001", &err));
  CHECK(err.find("press<percent>") != std::string::npos);
  CHECK_FALSE(parse_case_id(head + "eager2-press0-s000001", &err));
}

TEST_CASE("input reuse: -reuse, the last optional token, round trips") {
  Case c = example();
  c.reuse = true;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-graph4-reuse-s1a2b3c");
  check_round_trip(c);
  c.mode = ExecMode::kPipelined;
  c.skew = true;
  c.producer = Producer::kSlow;
  c.pressure = 50;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-pipe4-skew-prodslow-press50-reuse"
        "-s1a2b3c");
  check_round_trip(c);
  c.reuse = false;
  CHECK(format_case_id(c).find("reuse") == std::string::npos);  // the default has no token
  std::string err;
  const std::string head = "dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptynone-ub2-eager2-";
  // Its place is after every other optional token, right before the seed.
  CHECK_FALSE(parse_case_id(head + "reuse-skew-s000001", &err));
  CHECK_FALSE(parse_case_id(head + "reuse-prodslow-s000001", &err));
  CHECK_FALSE(parse_case_id(head + "reused-s000001", &err));
  CHECK(err.find("'reused'") != std::string::npos);
  CHECK(err.find("[-reuse]") != std::string::npos);
  CHECK(parse_case_id(head + "skew-reuse-s000001", &err).has_value());
}

TEST_CASE("preset names with dashes and custom geometries") {
  Case c = example();
  c.geometry = *find_geometry("kimi-k3");
  CHECK(format_case_id(c).starts_with("dcp4-kimi-k3-bf16-"));
  check_round_trip(c);
  // An overridden preset must not be written under the preset's name.
  c.geometry = *find_geometry("kimi");
  c.geometry.heads_per_rank = 8;
  CHECK(format_case_id(c).starts_with("dcp4-h8d512m128-bf16-"));
  c.geometry = custom_geometry(8, 512, 128);
  check_round_trip(c);
  c.geometry = custom_geometry(6, 512, 128, 128);
  CHECK(format_case_id(c).starts_with("dcp4-h6d512m128p128-"));
  check_round_trip(c);
}

TEST_CASE("every suite case and random cases round trip") {
  for (const std::string& suite : suite_names()) {
    if (suite == "full") continue;  // covered below on a small geometry
    for (int world : {2, 4, 8}) {
      for (const Geometry& g : geometry_presets()) {
        for (const Case& c : build_suite(suite, {world, g, 7})) check_round_trip(c);
      }
    }
  }
  for (const Case& c : build_suite("full", {4, *find_geometry("tiny"), 0})) check_round_trip(c);
  for (uint64_t i = 0; i < 500; ++i) {
    check_round_trip(random_case(99, i, 8, *find_geometry("kimi-k3")));
    check_round_trip(random_case(5, i, 4, custom_geometry(3, 128, 40, 16)));
  }
}

TEST_CASE("malformed ids are rejected with a message naming the bad token") {
  const std::string good = "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-graph4-s1a2b3c";
  struct Bad {
    std::string id;
    std::string mentions;
  };
  const Bad bads[] = {
      {"", "dcp<size>"},
      {"dcpx-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-s1a2b3c", "'dcpx'"},
      {"dcp4-kimmy-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-s1a2b3c", "'kimmy'"},
      {"dcp4-kimi-fp32-lsefp32-base2-t17-contig-emptyone-ub2-graph4-s1a2b3c", "'fp32'"},
      {"dcp4-kimi-bf16-lsefp64-base2-t17-contig-emptyone-ub2-graph4-s1a2b3c", "'lsefp64'"},
      {"dcp4-kimi-bf16-lsefp32-base3-t17-contig-emptyone-ub2-graph4-s1a2b3c", "'base3'"},
      {"dcp4-kimi-bf16-lsefp32-base2-tx-contig-emptyone-ub2-graph4-s1a2b3c", "'tx'"},
      {"dcp4-kimi-bf16-lsefp32-base2-t017-contig-emptyone-ub2-graph4-s1a2b3c", "'t017'"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-pad64-emptyone-ub2-graph4-s1a2b3c", "'pad64'"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-pad0x0-emptyone-ub2-graph4-s1a2b3c", "'pad0x0'"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptysome-ub2-graph4-s1a2b3c", "'emptysome'"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-specialnone-ub2-graph4-s1a2b3c",
       "'specialnone'"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-replay4-s1a2b3c", "'replay4'"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph-s1a2b3c", "'graph'"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-sXYZ", "'sXYZ'"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4", "missing token"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-s1a2b3c-extra", "'extra'"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-ep1ffffffff-s1a2b3c",
       "'ep1ffffffff'"},
      // Syntactically fine, semantically impossible.
      {"dcp4-kimi-bf16-lsefp32-base2-t130-contig-emptyone-ub2-graph4-s1a2b3c", "max_tokens"},
      {"dcp4-kimi-bf16-lsefp32-base2-t0-contig-emptyone-ub2-graph4-s1a2b3c", "t0"},
      {"dcp1-kimi-bf16-lsefp32-base2-t1-contig-emptyone-ub2-graph4-s1a2b3c", "dcp size 1"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-pad60x0-emptyone-ub2-graph4-s1a2b3c", "multiple of 8"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub3-graph4-s1a2b3c", "ub3"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph0-s1a2b3c", "call count"},
      {"dcp4-h8d500m128-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-s1a2b3c", "head dim"},
      {"dcp4-h4096d65536m128-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-s1a2b3c",
       "out of range"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph99999999999-s1a2b3c",
       "'graph99999999999'"},
      // Not canonical: an explicit default or a short seed.
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-l1-s1a2b3c", "canonical"},
      {"dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-s1", "canonical"},
  };
  std::string err;
  REQUIRE(parse_case_id(good, &err).has_value());
  for (const Bad& b : bads) {
    CAPTURE(b.id);
    err.clear();
    CHECK_FALSE(parse_case_id(b.id, &err).has_value());
    CHECK(err.find("bad case id") != std::string::npos);
    CHECK_MESSAGE(err.find(b.mentions) != std::string::npos, err);
    CHECK(err.find('\n') == std::string::npos);
  }
}

TEST_CASE("strides") {
  Case c = example();
  CHECK(c.out_token_stride() == 4 * 16 * 512 + 64);
  CHECK(c.lse_token_stride() == 4 * 16);
  c.lse_pad_elems = 3;
  CHECK(c.lse_token_stride() == 67);
}

TEST_CASE("geometry presets") {
  const auto k3 = find_geometry("kimi-k3");
  REQUIRE(k3);
  CHECK(k3->heads_per_rank == 6);
  CHECK(k3->head_dim == 512);
  CHECK(k3->storage_heads == 128);
  CHECK(find_geometry("kimi")->heads_per_rank == 16);
  CHECK(find_geometry("deepseek")->heads_per_rank == 16);
  CHECK_FALSE(find_geometry("nope"));
  for (const Geometry& g : geometry_presets()) {
    CHECK(!g.source.empty());
    CHECK(g.head_dim % 8 == 0);
  }
}

TEST_CASE("the contexts token: optional ctx2, last before the seed, round trips") {
  Case c = example();
  c.num_contexts = 2;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-graph4-ctx2-s1a2b3c");
  check_round_trip(c);
  c.producer = Producer::kSlow;
  c.mode = ExecMode::kPipelined;
  c.pressure = 50;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-pipe4-prodslow-press50-ctx2"
        "-s1a2b3c");
  check_round_trip(c);
  c.num_contexts = 1;
  CHECK(format_case_id(c).find("ctx") == std::string::npos);  // one context has no token
  for (const char* bad : {"ctx1", "ctx3", "ctx"}) rejected_token(bad);
  std::string err;  // its place is after the pressure, before the seed
  CHECK_FALSE(parse_case_id("dcp4-kimi-bf16-lsefp32-base2-t17-contig-emptyone-ub2-graph4-ctx2-"
                            "prodslow-s1a2b3c",
                            &err)
                  .has_value());
}

TEST_CASE("the init token: initfail or initlate<ms>, after ctx2, before the seed, round trips") {
  Case c = example();
  c.init_fault = InitFault::kFail;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-graph4-initfail-s1a2b3c");
  check_round_trip(c);
  c.num_contexts = 2;
  c.init_fault = InitFault::kLate;
  c.init_late_ms = 300;
  CHECK(format_case_id(c) ==
        "dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone-ub2-graph4-ctx2-initlate300-s1a2b3c");
  check_round_trip(c);
  for (const char* bad : {"initlate0", "initlate5001", "initlate", "initfails", "init"}) {
    rejected_token(bad);
  }
  c.init_late_ms = 0;  // late needs a delay, and only late has one
  std::string err;
  CHECK_FALSE(parse_case_id(format_case_id(c), &err).has_value());
}

}  // namespace
}  // namespace dcp
