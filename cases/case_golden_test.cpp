// Golden values: case ids, suite case lists, random cases and shrink
// candidates must not change (replay lines in docs and users' CI logs name
// cases by id). The hashes below were computed by the code before the axis
// table (cases/axes.h) existed; a change here is a change users see. Since
// then: the producer axis added the producer cases to default and full, draws
// it in random cases (after every other axis: their values are unchanged) and
// shrinks it; the reuse axis added its family's cases to default and full
// and draws it last in random cases (cleared, they hash as before); the
// contexts axis (-ctx2) did the same (with num_contexts reset to 1 the suites'
// and random cases hash as before).
//
// Every case is also hashed through fields_text(), written out field by field
// here and not through the table, so the ids and the cases are pinned
// independently. The mstress axis (drawn last) changed only the random cases it
// is drawn for (with it cleared they hashed as before) and their shrink steps.
// To print the current values: DCP_PRINT_GOLDEN=1 cases_tests
// -tc='golden*'.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "case.h"
#include "geometry.h"
#include "mix.h"
#include "random_case.h"
#include "shrink.h"
#include "suites.h"

namespace dcp {
namespace {

// Every field of a Case, independent of format_case_id.
std::string fields_text(const Case& c) {
  const Geometry& g = c.geometry;
  return fmt::format(
      "{}|{}:{}:{}:{}:{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", c.dcp_size, g.name,
      g.heads_per_rank, g.head_dim, g.max_tokens, g.storage_heads, static_cast<int>(c.out_dtype),
      static_cast<int>(c.lse_dtype), static_cast<int>(c.lse_base), c.num_tokens,
      c.out_pad_elems, c.lse_pad_elems, static_cast<int>(c.empty), static_cast<int>(c.special),
      c.num_slots, static_cast<int>(c.mode), c.num_calls, c.num_layers, c.skew ? 1 : 0,
      c.epoch_start ? fmt::format("{:x}", *c.epoch_start) : "-", c.seed) +
         // Later axes, only off their default (so the cases before them hash as they did).
         (c.producer != Producer::kDefault ? fmt::format("|prod{}", static_cast<int>(c.producer))
                                           : "") +
         (c.reuse ? "|reuse" : "") +
         (c.num_contexts != 1 ? fmt::format("|ctx{}", c.num_contexts) : "") +
         (c.mstress ? "|mstress" : "");
}

// Running FNV-1a over lines, plus a count.
struct Digest {
  uint64_t ids = 0xCBF29CE484222325ull;
  uint64_t fields = 0xCBF29CE484222325ull;
  uint64_t count = 0;
  static void fold(uint64_t& h, const std::string& s) {
    for (char ch : s + "\n") {
      h ^= static_cast<uint8_t>(ch);
      h *= 0x100000001B3ull;
    }
  }
  void add(const Case& c) {
    const std::string id = format_case_id(c);
    fold(ids, id);
    fold(fields, fields_text(c));
    ++count;
    std::string err;
    const auto back = parse_case_id(id, &err);
    REQUIRE_MESSAGE(back.has_value(), err);
    CHECK(*back == c);
  }
  std::string text() const { return fmt::format("{} {:016x} {:016x}", count, ids, fields); }
};

bool print_golden() { return std::getenv("DCP_PRINT_GOLDEN") != nullptr; }

// Presets, a custom geometry with padded storage, and an overridden preset
// (written as a custom geometry).
std::vector<Geometry> geometries() {
  std::vector<Geometry> gs = geometry_presets();
  gs.push_back(custom_geometry(3, 128, 40, 16));
  Geometry over = *find_geometry("kimi");
  over.heads_per_rank = 8;
  gs.push_back(over);
  return gs;
}

struct Golden {
  const char* key;
  const char* digest;
};

void check_golden(const std::vector<Golden>& expected, const std::string& key,
                  const Digest& d) {
  if (print_golden()) MESSAGE(fmt::format("{{\"{}\", \"{}\"}},", key, d.text()));
  for (const Golden& g : expected) {
    if (key == g.key) {
      CHECK_MESSAGE(d.text() == g.digest, key);
      return;
    }
  }
  FAIL_CHECK("no golden value for " << key);
}

const std::vector<Golden> kSuiteGolden = {
    {"smoke/w2", "48 2a9b69a9428148cd 62bb217a4cdbec95"},
    {"smoke/w4", "60 a9493bf3095d20c6 dd1ea2d32846a97c"},
    {"smoke/w8", "72 547c035542b11f56 228e5f4479f8ead8"},
    {"default/w2", "1008 57b3845746fb7efa 606f73b59d91d221"},
    {"default/w4", "2032 35c7cadd6b4b3c94 226ce352a75fdccc"},
    {"default/w8", "3040 ff3805c87063d894 e4fb3c891acbb8f4"},
    {"full/w2", "84648 228228396eea6ab3 54f749aebe2db13a"},
    {"full/w4", "169296 82da7f00abda7a18 c3134424737f1b72"},
    {"full/w8", "253944 4e73a26f9af3e5de 740223ea13717d5a"},
    {"upstream/w2", "96 b35b360fd5ce87a1 95ba1871c9420829"},
    {"upstream/w4", "192 970a36cb456b5735 f380d0003f3b4159"},
    {"upstream/w8", "288 dfefd91adc967c7d e847e7da96bebd41"},
    {"pressure/w2", "36 cf3e4b1c876145ba 4e5867ca28df42ac"},
    {"pressure/w4", "72 b0aeb902ad397d03 e7ac13d54fe06c70"},
    {"pressure/w8", "108 50cf9d0056643285 8b55b05505c58188"},
    {"memstress/w2", "48 451db829b03d0e24 e42634d6cbc88bb6"},
    {"memstress/w4", "96 27e18ba15b3ede1d 69555a0353cdde33"},
    {"memstress/w8", "144 a5215e78f7c7b886 110b5d2ef297a798"},
};

const std::vector<Golden> kRandomGolden = {
    {"random/w2", "9600 28da8f6a856ec199 7246d611701eb88b"},
    {"random/w3", "9600 e233d99b0f3400ab 2780e0e1ddee3413"},
    {"random/w4", "9600 af8fa19a8832c325 4d9935236688d933"},
    {"random/w6", "9600 d14d607b30c91033 4c93d4ec2fe5005f"},
    {"random/w8", "9600 dd1a6f8d61f5b320 9570326217f842ce"},
};

const std::vector<Golden> kShrinkGolden = {
    {"shrink/random", "16361 09a2299a7e20141b 20bc0f103ae06d43"},
    {"shrink/suites", "2664 3008917849f8496f 2a9eca75be97979c"},
    {"shrink/chains", "7721 49287dc29289ac23 ca99da3ecfa0a589"},
};

TEST_CASE("golden: every case of every suite keeps its id and fields") {
  for (const std::string& suite : suite_names()) {
    for (int world : {2, 4, 8}) {
      Digest d;
      for (const Geometry& g : geometries()) {
        for (uint64_t seed : {uint64_t{0}, uint64_t{0xDEADBEEFCAFEull}}) {
          if (suite == "full" && seed != 0) continue;  // the seed only moves the seed field
          for (const Case& c : build_suite(suite, {world, g, seed})) d.add(c);
        }
      }
      check_golden(kSuiteGolden, fmt::format("{}/w{}", suite, world), d);
    }
  }
}

TEST_CASE("golden: random cases for a (seed, index) stay the same") {
  for (int world : {2, 3, 4, 6, 8}) {
    Digest d;
    for (const Geometry& g : geometries()) {
      for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{99}, ~uint64_t{0}}) {
        for (uint64_t i = 0; i < 400; ++i) d.add(random_case(seed, i, world, g));
      }
    }
    check_golden(kRandomGolden, fmt::format("random/w{}", world), d);
  }
}

TEST_CASE("golden: shrink candidates keep their order") {
  auto shrink_digest = [](const std::vector<Case>& parents) {
    Digest d;
    for (const Case& c : parents) {
      Digest::fold(d.fields, fmt::format("measure {}", shrink_measure(c)));
      for (const Case& k : shrink_candidates(c)) d.add(k);
      Digest::fold(d.ids, "--");
    }
    return d;
  };
  std::vector<Case> random_parents;
  for (const Geometry& g : geometries()) {
    for (uint64_t i = 0; i < 300; ++i) random_parents.push_back(random_case(3, i, 8, g));
  }
  check_golden(kShrinkGolden, "shrink/random", shrink_digest(random_parents));
  std::vector<Case> suite_parents;
  for (const std::string suite : {"smoke", "default", "upstream"}) {
    for (const Case& c : build_suite(suite, {8, *find_geometry("kimi-k3"), 5})) {
      suite_parents.push_back(c);
    }
  }
  check_golden(kShrinkGolden, "shrink/suites", shrink_digest(suite_parents));
  // Shrinking all the way (first candidate each time) from random cases.
  Digest chains;
  for (uint64_t i = 0; i < 200; ++i) {
    Case c = random_case(11, i, 8, *find_geometry("kimi"));
    for (auto cand = shrink_candidates(c); !cand.empty(); cand = shrink_candidates(c)) {
      c = cand[i % cand.size()];
      chains.add(c);
    }
  }
  check_golden(kShrinkGolden, "shrink/chains", chains);
}

}  // namespace
}  // namespace dcp
