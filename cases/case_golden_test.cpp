// Golden values: case ids, suite case lists, random cases and shrink
// candidates must not change (replay lines in docs and users' CI logs name
// cases by id). The hashes below were computed by the code before the axis
// table (cases/axes.h) existed; a change here is a change users see.
//
// Every case is also hashed through fields_text(), written out field by field
// here and not through the table, so the ids and the cases are pinned
// independently. To print the current values: DCP_PRINT_GOLDEN=1 cases_tests
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
      c.epoch_start ? fmt::format("{:x}", *c.epoch_start) : "-", c.seed);
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
    {"default/w2", "744 9a71567803195523 7673d2deee760945"},
    {"default/w4", "1504 00e366d020665df2 94774071f9dc895c"},
    {"default/w8", "2248 ca562642f57b4a04 5359ffabdc6f30b8"},
    {"full/w2", "84516 50376b2f9d6d5430 627ddf6b9c778c79"},
    {"full/w4", "169032 6993a49533d784c8 1b5d86e9520a2575"},
    {"full/w8", "253548 25bb29781d0fdc4b 38301a8681b671dd"},
    {"upstream/w2", "96 b35b360fd5ce87a1 95ba1871c9420829"},
    {"upstream/w4", "192 970a36cb456b5735 f380d0003f3b4159"},
    {"upstream/w8", "288 dfefd91adc967c7d e847e7da96bebd41"},
};

const std::vector<Golden> kRandomGolden = {
    {"random/w2", "9600 3e2d19af761ceb69 2813d4b55bb52a65"},
    {"random/w3", "9600 b5febae867920621 43dbb612cc2f0b79"},
    {"random/w4", "9600 a0216947dd88a6b7 d6b3339d86db5617"},
    {"random/w6", "9600 2688b5a119b555be fbba00aa0d6f2d33"},
    {"random/w8", "9600 08f4ffaf21b50adb 5d7e50bccce8b278"},
};

const std::vector<Golden> kShrinkGolden = {
    {"shrink/random", "15991 6277fdb7cabd4d38 078d7c9ca11718c9"},
    {"shrink/suites", "2218 be16588878532a38 932be2f61ac45a4d"},
    {"shrink/chains", "7714 9fa0af32f2fcb76b 3c71669d9fc255c2"},
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
