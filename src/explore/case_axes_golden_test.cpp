// Golden values for the two views of a case outside cases/: the failure
// bundle's "scenario" JSON and the terminal's axis labels. The hashes were
// computed by main e88f6fa's case_json (failure_bundle.cpp) and case_axes
// (report_terminal.cpp), copied into a scratch program, before the axis table
// (cases/axes.h) existed; the producer axis then added its JSON field and
// label to every case (and a producer to some random ones), the pressure
// axis its label, the reuse axis its label (and its JSON field to the random
// ones it is drawn for), and the contexts axis likewise (-ctx2), and the
// mstress axis its label (and its id token and JSON field to the random ones
// it is drawn for; checked: without its label the axes digest was unchanged). To print the
// current values: DCP_PRINT_GOLDEN=1 core_tests -tc='golden*'.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "failure_bundle.h"
#include "geometry.h"
#include "random_case.h"
#include "report_terminal.h"
#include "suites.h"

namespace dcp {
namespace {

std::vector<Case> sample_cases() {
  std::vector<Case> cases;
  Geometry over = *find_geometry("kimi");
  over.heads_per_rank = 8;
  for (const Geometry& g : {*find_geometry("kimi-k3"), *find_geometry("tiny"),
                            custom_geometry(3, 128, 40, 16), over}) {
    for (uint64_t i = 0; i < 300; ++i) cases.push_back(random_case(21, i, 8, g));
    for (const Case& c : build_suite("smoke", {8, g, 3})) cases.push_back(c);
  }
  return cases;
}

struct Digest {
  uint64_t h = 0xCBF29CE484222325ull;
  uint64_t count = 0;
  void add(const std::string& s) {
    for (char ch : s + "\n") {
      h ^= static_cast<uint8_t>(ch);
      h *= 0x100000001B3ull;
    }
    ++count;
  }
  std::string text() const { return fmt::format("{} {:016x}", count, h); }
};

void check_golden(const char* key, const Digest& d, const char* expected) {
  if (std::getenv("DCP_PRINT_GOLDEN") != nullptr) MESSAGE(std::string(key) << ": " << d.text());
  CHECK_MESSAGE(d.text() == expected, key);
}

TEST_CASE("golden: a failure bundle's scenario JSON keeps every field") {
  Digest d;
  for (const Case& c : sample_cases()) {
    FailureBundle b;
    b.scenario = c;
    d.add(failure_bundle_json(b)["scenario"].dump());
  }
  check_golden("bundle", d, "1224 b301a44388a75f35");
}

TEST_CASE("golden: the terminal's axis labels of a case") {
  Digest d;
  for (const Case& c : sample_cases()) {
    std::string line;
    for (const auto& [axis, value] : case_axes(c)) line += axis + "=" + value + " ";
    d.add(line);
  }
  check_golden("axes", d, "1224 5908fe02da0c3c61");
}

}  // namespace
}  // namespace dcp
