#include "impl_agreement.h"

#include <doctest/doctest.h>

#include "geometry.h"

namespace dcp {
namespace {

Case tiny_case() {
  Case c;
  c.dcp_size = 2;
  c.geometry = custom_geometry(2, 8, 4);  // H=2, D=8
  c.out_dtype = DType::kBf16;
  c.num_tokens = 3;
  return c;
}

std::vector<uint8_t> output_of(const Case& c, uint16_t fill) {
  const size_t n =
      static_cast<size_t>(c.num_tokens) * c.geometry.heads_per_rank * c.geometry.head_dim;
  std::vector<uint8_t> out(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = fill & 0xFF;
    out[2 * i + 1] = fill >> 8;
  }
  return out;
}

TEST_CASE("identical outputs agree and change nothing") {
  const Case c = tiny_case();
  RankCaseResult r;
  r.passed = true;
  const auto a = output_of(c, 0x3f80);  // bf16 1.0
  CHECK(check_impls_agree(c, 1, {a, a}, {a, a}, r) == 0);
  CHECK(r.passed);
  CHECK(r.num_mismatches == 0);
  CHECK(r.first_mismatches.empty());
}

TEST_CASE("one differing bit is a mismatch named direct vs stock, with its position") {
  const Case c = tiny_case();
  RankCaseResult r;
  r.passed = true;
  const auto a = output_of(c, 0x3f80);
  auto b = a;
  // Element (token 2, head 1, dim 5) of op 1: index (2*2 + 1)*8 + 5 = 45.
  b[2 * 45] ^= 0x01;  // one ULP of bf16 1.0
  CHECK(check_impls_agree(c, 3, {a, a}, {a, b}, r) == 1);
  CHECK_FALSE(r.passed);
  CHECK(r.num_mismatches == 1);
  REQUIRE(r.first_mismatches.size() == 1);
  const Mismatch& m = r.first_mismatches[0];
  CHECK(m.likely_source == kImplsDisagree);
  CHECK(m.rank == 3);
  CHECK(m.op_idx == 1);
  CHECK(m.token == 2);
  CHECK(m.head == 1);
  CHECK(m.dim == 5);
  CHECK(m.want == 1.0);
  CHECK(m.got == doctest::Approx(1.0078125));
  CHECK(m.err_ulps == 1);
}

TEST_CASE("a missing call or a short output is a disagreement") {
  const Case c = tiny_case();
  RankCaseResult r;
  r.passed = true;
  const auto a = output_of(c, 0x3f80);
  CHECK(check_impls_agree(c, 0, {a, a}, {a}, r) > 0);
  CHECK_FALSE(r.passed);
  RankCaseResult r2;
  r2.passed = true;
  CHECK(check_impls_agree(c, 0, {a}, {std::vector<uint8_t>(a.begin(), a.end() - 2)}, r2) > 0);
  CHECK_FALSE(r2.passed);
}

TEST_CASE("reported mismatches are capped, the count is not") {
  const Case c = tiny_case();
  RankCaseResult r;
  const auto a = output_of(c, 0x3f80);
  const auto b = output_of(c, 0xbf80);  // -1.0 everywhere: opposite sign
  const int64_t n = check_impls_agree(c, 0, {a}, {b}, r);
  CHECK(n == 3 * 2 * 8);
  CHECK(r.num_mismatches == n);
  CHECK(r.first_mismatches.size() == 8);
}

}  // namespace
}  // namespace dcp
