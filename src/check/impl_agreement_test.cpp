#include "impl_agreement.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "checker.h"
#include "generator.h"
#include "geometry.h"
#include "numeric.h"
#include "row_reference.h"

namespace dcp {
namespace {

Case tiny_case() {
  Case c;
  c.dcp_size = 4;
  c.geometry = *find_geometry("tiny");  // H = 2, D = 64
  c.out_dtype = DType::kBf16;
  c.lse_base = LseBase::kE;
  c.num_tokens = 3;
  c.seed = 0xa9ee;
  return c;
}

constexpr int kGroupRank = 1;

// The combined LSE a correct kernel emits: the float64 one, rounded to fp32.
std::vector<uint8_t> reference_lse(const Case& c, int op) {
  const OpGenerator gen(c, 0, op);
  const int H = c.geometry.heads_per_rank;
  std::vector<uint8_t> out(sizeof(float) * c.num_tokens * H);
  RowReference r;
  for (int t = 0; t < c.num_tokens; ++t) {
    for (int h = 0; h < H; ++h) {
      row_weights(c, gen, t, kGroupRank * H + h, r);
      const auto v = static_cast<float>(row_lse_bound(c, r.weights).want);
      std::memcpy(out.data() + sizeof(float) * (static_cast<size_t>(t) * H + h), &v, sizeof v);
    }
  }
  return out;
}

// A correct kernel's calls: the reference rounded once (ops 0 and 1).
std::vector<KeptCall> correct_calls(const Case& c, bool with_lse = false) {
  std::vector<KeptCall> calls;
  for (int op = 0; op < 2; ++op) {
    KeptCall k;
    k.op_idx = op;
    k.num_tokens = c.num_tokens;
    k.output = rounded_reference_output(c, 0, kGroupRank, op);
    if (with_lse) k.lse = reference_lse(c, op);
    calls.push_back(std::move(k));
  }
  return calls;
}

AgreementSpec spec(bool exact = false) {
  AgreementSpec s;
  s.exact = exact;
  s.kernel = "direct";
  s.against = "libother.so";
  s.group_rank = kGroupRank;
  s.global_rank = 3;
  return s;
}

// Element (token 2, head 1, dim 5): index (2*2 + 1)*64 + 5 = 325.
constexpr size_t kElem = 325;

// Moves element kElem of `out` by `ulps` representable values in magnitude
// (negative: towards zero, so the step never crosses a binade upwards).
void nudge(std::vector<uint8_t>& out, int ulps) {
  const uint32_t bits = read_bits(Format::kBf16, out.data(), kElem);
  write_bits(Format::kBf16, out.data(), kElem, static_cast<uint32_t>(static_cast<int>(bits) + ulps));
}

RankCaseResult passing() {
  RankCaseResult r;
  r.passed = true;
  return r;
}

TEST_CASE("identical outputs agree, are all counted, and change nothing") {
  const Case c = tiny_case();
  RankCaseResult r = passing();
  const auto a = correct_calls(c, true);
  const Agreement g = check_impls_agree(c, a, a, spec(), r);
  CHECK(r.passed);
  CHECK(r.num_mismatches == 0);
  CHECK(r.first_mismatches.empty());
  REQUIRE(r.agreement.has_value());
  CHECK(g.output.num_compared == 2 * 3 * 2 * 64);
  CHECK(g.lse.num_compared == 2 * 3 * 2);
  CHECK(g.output.num_differing == 0);
  CHECK_FALSE(g.output.max_at.has_value());
}

TEST_CASE("a 1-ulp difference is within tolerance: passes, counted, max ulp and position") {
  const Case c = tiny_case();
  RankCaseResult r = passing();
  const auto a = correct_calls(c);
  auto b = a;
  nudge(b[1].output, -1);
  const Agreement g = check_impls_agree(c, a, b, spec(), r);
  CHECK(r.passed);
  CHECK(r.num_mismatches == 0);
  CHECK(g.output.num_differing == 1);
  CHECK(g.output.num_beyond == 0);
  CHECK(g.output.max_ulps == 1);
  REQUIRE(g.output.max_at.has_value());
  const Mismatch& m = *g.output.max_at;
  CHECK(m.rank == 3);
  CHECK(m.op_idx == 1);
  CHECK(m.token == 2);
  CHECK(m.head == 1);
  CHECK(m.dim == 5);
  CHECK(m.want == read_value(Format::kBf16, a[1].output.data(), kElem));
  CHECK(m.got == read_value(Format::kBf16, b[1].output.data(), kElem));
  CHECK(m.tolerance_ulps >= 1);
  CHECK(m.tolerance_ulps < 1.1);  // twice about half an ulp: tight
}

TEST_CASE("a difference beyond tolerance fails, named after both kernels") {
  const Case c = tiny_case();
  RankCaseResult r = passing();
  const auto a = correct_calls(c);
  auto b = a;
  nudge(b[1].output, -2);
  const Agreement g = check_impls_agree(c, a, b, spec(), r);
  CHECK_FALSE(r.passed);
  CHECK(r.num_mismatches == 1);
  CHECK(g.output.num_beyond == 1);
  CHECK(g.output.max_ulps == 2);
  REQUIRE(r.first_mismatches.size() == 1);
  const Mismatch& m = r.first_mismatches[0];
  CHECK(m.likely_source.find("'direct'") != std::string::npos);
  CHECK(m.likely_source.find("'libother.so'") != std::string::npos);
  CHECK(m.err_ulps == 2);
  CHECK(r.agreement->output.num_beyond == 1);
}

TEST_CASE("--against-exact fails on 1 ulp, with tolerance 0") {
  const Case c = tiny_case();
  RankCaseResult r = passing();
  const auto a = correct_calls(c);
  auto b = a;
  nudge(b[0].output, -1);
  const Agreement g = check_impls_agree(c, a, b, spec(/*exact=*/true), r);
  CHECK(g.exact);
  CHECK_FALSE(r.passed);
  CHECK(g.output.num_beyond == 1);
  REQUIRE(r.first_mismatches.size() == 1);
  CHECK(r.first_mismatches[0].tolerance_ulps == 0);
  CHECK(r.first_mismatches[0].likely_source.find("--against-exact") != std::string::npos);
}

TEST_CASE("a sign change fails; ULPs across zero add both magnitudes, +0 vs -0 is 0") {
  const Case c = tiny_case();
  RankCaseResult r = passing();
  const auto a = correct_calls(c);
  auto b = a;
  const uint32_t bits = read_bits(Format::kBf16, a[0].output.data(), kElem);
  REQUIRE((bits & 0x7FFF) != 0);
  write_bits(Format::kBf16, b[0].output.data(), kElem, bits ^ 0x8000);
  const Agreement g = check_impls_agree(c, a, b, spec(), r);
  CHECK_FALSE(r.passed);
  CHECK(g.output.max_ulps == 2.0 * (bits & 0x7FFF));
  CHECK(ulp_distance(Format::kBf16, 0x0000, 0x8000) == 0);
  CHECK(ulp_distance(Format::kBf16, 0x0001, 0x8001) == 2);
  CHECK(ulp_distance(Format::kFp16, 0x3C00, 0x3C03) == 3);
  CHECK(ulp_distance(Format::kFp32, 0x3F800000, 0x3F7FFFFF) == 1);
}

TEST_CASE("a NaN never agrees, even with a NaN of other bits") {
  const Case c = tiny_case();
  const auto a = correct_calls(c);
  auto b = a;
  write_bits(Format::kBf16, b[1].output.data(), kElem, quiet_nan_bits(Format::kBf16));
  RankCaseResult r = passing();
  const Agreement g = check_impls_agree(c, a, b, spec(), r);
  CHECK_FALSE(r.passed);
  CHECK(std::isinf(g.output.max_ulps));
  auto a2 = b;
  write_bits(Format::kBf16, a2[1].output.data(), kElem, quiet_nan_bits(Format::kBf16) | 1);
  RankCaseResult r2 = passing();
  CHECK(check_impls_agree(c, a2, b, spec(), r2).output.num_beyond == 1);
}

TEST_CASE("a missing call or a short output is a disagreement") {
  const Case c = tiny_case();
  const auto a = correct_calls(c);
  RankCaseResult r = passing();
  check_impls_agree(c, a, {a[0]}, spec(), r);
  CHECK_FALSE(r.passed);
  REQUIRE_FALSE(r.first_mismatches.empty());
  CHECK(r.first_mismatches[0].likely_source.find("sizes differ") != std::string::npos);
  auto b = a;
  b[1].output.resize(b[1].output.size() - 2);
  RankCaseResult r2 = passing();
  CHECK(check_impls_agree(c, a, b, spec(), r2).output.num_beyond == 1);
  CHECK_FALSE(r2.passed);
}

TEST_CASE("the combined LSE is compared when both kernels emit it, with the LSE bound") {
  const Case c = tiny_case();
  const auto a = correct_calls(c, true);
  auto b = a;
  uint32_t bits = read_bits(Format::kFp32, b[0].lse.data(), 3);
  write_bits(Format::kFp32, b[0].lse.data(), 3, bits + 1);
  RankCaseResult r = passing();
  Agreement g = check_impls_agree(c, a, b, spec(), r);
  CHECK(r.passed);
  CHECK(g.lse.num_differing == 1);
  CHECK(g.lse.max_ulps == 1);
  REQUIRE(g.lse.max_at.has_value());
  CHECK(g.lse.max_at->dim == -1);
  CHECK(g.lse.max_at->token == 1);
  CHECK(g.lse.max_at->head == 1);
  write_bits(Format::kFp32, b[0].lse.data(), 3, bits + 100000);
  RankCaseResult r2 = passing();
  g = check_impls_agree(c, a, b, spec(), r2);
  CHECK_FALSE(r2.passed);
  CHECK(g.lse.num_beyond == 1);
  // One kernel without the LSE: only the outputs are compared.
  auto no_lse = correct_calls(c);
  RankCaseResult r3 = passing();
  g = check_impls_agree(c, a, no_lse, spec(), r3);
  CHECK(r3.passed);
  CHECK(g.lse.num_compared == 0);
}

TEST_CASE("reported mismatches are capped, the count is not") {
  const Case c = tiny_case();
  RankCaseResult r;
  const auto a = correct_calls(c);
  auto b = a;
  for (auto& call : b) {
    for (size_t i = 0; i < call.output.size(); i += 2) call.output[i + 1] ^= 0x80;  // sign
  }
  const Agreement g = check_impls_agree(c, a, b, spec(), r);
  CHECK(g.output.num_differing == 2 * 3 * 2 * 64);
  CHECK(g.output.num_beyond > 8);  // all but a zero's sign (+0 vs -0 agree), if any
  CHECK(r.num_mismatches == g.output.num_beyond);
  CHECK(r.first_mismatches.size() == 8);
}

}  // namespace
}  // namespace dcp
