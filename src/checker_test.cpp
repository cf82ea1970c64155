#include "checker.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "errors.h"
#include "generator.h"
#include "geometry.h"
#include "numeric.h"

namespace dcp {
namespace {

// An fp32 kernel, written independently of the float64 reference: LSE to base
// 2 in float, max, exp2f, normalise, fma accumulate, one rounding. The
// `drop` source is left out (a deliberately wrong combine).
std::vector<uint8_t> fp32_kernel(const Case& c, int group_idx, int group_rank, int op,
                                 int drop = -1) {
  const OpGenerator gen(c, group_idx, op);
  const Format f = format_of(c.out_dtype);
  const int w = c.dcp_size, hc = c.geometry.heads_per_rank, dc = c.geometry.head_dim;
  std::vector<uint8_t> out(static_cast<size_t>(c.num_tokens * hc * dc * format_bytes(f)));
  std::vector<double> x(static_cast<size_t>(dc));
  for (int t = 0; t < c.num_tokens; ++t) {
    for (int h = 0; h < hc; ++h) {
      const int head = group_rank * hc + h;
      std::vector<float> l2(static_cast<size_t>(w)), e(static_cast<size_t>(w));
      float m = -INFINITY;
      for (int s = 0; s < w; ++s) {
        float l = static_cast<float>(gen.lse_value(s, t, head));
        if (c.lse_base == LseBase::kE) l *= 1.44269504088896340736f;
        if (!(l < INFINITY) || gen.row_masked(s, t) || s == drop) l = -INFINITY;
        l2[static_cast<size_t>(s)] = l;
        m = std::max(m, l);
      }
      float sum = 0;
      for (int s = 0; s < w; ++s) {
        const float ls = l2[static_cast<size_t>(s)];
        e[static_cast<size_t>(s)] = ls == -INFINITY ? 0.0f : std::exp2(ls - m);
        sum += e[static_cast<size_t>(s)];
      }
      std::vector<float> acc(static_cast<size_t>(dc), 0.0f);
      for (int s = 0; s < w && sum > 0; ++s) {
        const float ws = e[static_cast<size_t>(s)] / sum;
        if (ws == 0) continue;
        gen.output_row(s, t, head, x.data());
        for (int d = 0; d < dc; ++d) {
          acc[static_cast<size_t>(d)] = std::fma(ws, static_cast<float>(x[static_cast<size_t>(d)]),
                                                 acc[static_cast<size_t>(d)]);
        }
      }
      for (int d = 0; d < dc; ++d) {
        const float v = acc[static_cast<size_t>(d)];
        write_bits(f, out.data(), (static_cast<size_t>(t) * hc + h) * dc + d,
                   f == Format::kFp16 ? float_to_fp16_bits(v) : float_to_bf16_bits(v));
      }
    }
  }
  return out;
}

Case make(int w, DType out, DType lse, LseBase base, EmptyPattern e, SpecialLse sp,
          const char* geo = "tiny") {
  Case c;
  c.dcp_size = w;
  c.geometry = *find_geometry(geo);
  c.out_dtype = out;
  c.lse_dtype = lse;
  c.lse_base = base;
  c.num_tokens = std::min(29, c.geometry.max_tokens);
  c.empty = e;
  c.special = sp;
  c.seed = 0x77a1 + static_cast<uint64_t>(w) * 31 + static_cast<uint64_t>(e) * 7 +
           static_cast<uint64_t>(sp);
  return c;
}

size_t elem(const Case& c, int t, int h, int d) {
  return (static_cast<size_t>(t) * c.geometry.heads_per_rank + h) * c.geometry.head_dim + d;
}

TEST_CASE("a correct fp32 kernel passes every pattern, special value, dtype and base") {
  int64_t checked = 0;
  for (int w : {2, 4}) {
    for (auto e : {EmptyPattern::kNone, EmptyPattern::kOne, EmptyPattern::kAll,
                   EmptyPattern::kRandom, EmptyPattern::kSpec}) {
      for (auto sp : {SpecialLse::kNone, SpecialLse::kEqual, SpecialLse::kHugeGap,
                      SpecialLse::kPosInf, SpecialLse::kNegInf, SpecialLse::kNan}) {
        for (auto out : {DType::kFp16, DType::kBf16}) {
          for (auto lse : {DType::kFp32, DType::kFp16, DType::kBf16}) {
            for (auto base : {LseBase::kE, LseBase::k2}) {
              const Case c = make(w, out, lse, base, e, sp);
              for (int gr = 0; gr < w; gr += w - 1) {
                const CallCheck r =
                    check_call_output(c, 1, gr, gr + 4, 3, fp32_kernel(c, 1, gr, 3));
                CAPTURE(format_case_id(c));
                CHECK(r.num_mismatches == 0);
                if (!r.first_mismatches.empty()) {
                  const Mismatch& m = r.first_mismatches[0];
                  MESSAGE("t" << m.token << " h" << m.head << " d" << m.dim << " got " << m.got
                              << " want " << m.want << " err " << m.err_ulps << " tol "
                              << m.tolerance_ulps);
                }
                checked += r.num_checked;
              }
            }
          }
        }
      }
    }
  }
  CHECK(checked > 1'000'000);
  // A full-size geometry too (kimi-k3: 6 heads, D = 512) on the upstream profile.
  const Case k3 = make(4, DType::kBf16, DType::kFp32, LseBase::kE, EmptyPattern::kOne,
                       SpecialLse::kNone, "kimi-k3");
  CHECK(check_call_output(k3, 0, 2, 2, 0, fp32_kernel(k3, 0, 2, 0)).num_mismatches == 0);
  CHECK(check_call_output(k3, 0, 2, 2, 0, fp32_kernel(k3, 0, 2, 0), {true}).num_mismatches == 0);
}

TEST_CASE("a 2-ulp error is caught and reported with coordinates") {
  for (auto out : {DType::kFp16, DType::kBf16}) {
    const Case c = make(4, out, DType::kFp32, LseBase::k2, EmptyPattern::kNone, SpecialLse::kNone);
    const Format f = format_of(out);
    auto got = fp32_kernel(c, 0, 1, 0);
    const size_t i = elem(c, 7, 1, 13);
    const uint32_t bits = read_bits(f, got.data(), i);
    write_bits(f, got.data(), i, bits + 2);  // two ulps away from zero (same binade)
    const CallCheck r = check_call_output(c, 0, 1, 5, 0, got);
    CHECK(r.num_mismatches == 1);
    REQUIRE(r.first_mismatches.size() == 1u);
    const Mismatch& m = r.first_mismatches[0];
    CHECK(m.rank == 5);
    CHECK(m.token == 7);
    CHECK(m.head == 1);
    CHECK(m.dim == 13);
    CHECK(m.err_ulps > 1.4);
    CHECK(m.err_ulps < 2.6);
    CHECK(m.tolerance_ulps < 1.0);
    CHECK(m.got == decode(f, bits + 2));
  }
}

TEST_CASE("the bound is >= 10x tighter than rtol = atol = 3e-2 for typical values") {
  for (auto out : {DType::kFp16, DType::kBf16}) {
    for (double want : {0.01, 0.1, 0.3, 0.7, 1.0, 1.5, 1.99}) {
      const double upstream = 3e-2 + 3e-2 * want;
      const double ours = element_tolerance(out, want, 4, std::max(want, 1.0), 40.0);
      CAPTURE(want);
      CHECK(upstream / ours >= 10.0);
      // Without cancellation (S = |want|) it is half an ulp plus a small
      // fp32 part.
      CHECK(element_tolerance(out, want, 4, want, 40.0) <= 0.55 * ulp_of(format_of(out), want));
    }
  }
  // And over every element of a real case: the median ratio is far above 10.
  const Case c = make(4, DType::kBf16, DType::kFp32, LseBase::kE, EmptyPattern::kNone,
                      SpecialLse::kNone, "kimi-k3");
  auto got = fp32_kernel(c, 0, 0, 0);
  // Shift one element by 3e-2 * (1 + |want|) / 2: the upstream check passes it,
  // ours does not.
  const Format f = format_of(c.out_dtype);
  const size_t i = elem(c, 3, 2, 100);
  const double v = read_value(f, got.data(), i);
  write_value(f, got.data(), i, v + 0.5 * (3e-2 + 3e-2 * std::fabs(v)));
  CHECK(check_call_output(c, 0, 0, 0, 0, got).num_mismatches == 1);
  CHECK(check_call_output(c, 0, 0, 0, 0, got, {true}).num_mismatches == 0);
}

TEST_CASE("NaN never passes; poison is named") {
  const Case c =
      make(2, DType::kBf16, DType::kFp16, LseBase::kE, EmptyPattern::kNone, SpecialLse::kNone);
  const Format f = format_of(c.out_dtype);
  auto got = fp32_kernel(c, 0, 0, 0);
  write_bits(f, got.data(), elem(c, 0, 0, 0), quiet_nan_bits(f));
  write_bits(f, got.data(), elem(c, 2, 1, 5), all_ones_bits(f));
  for (bool upstream : {false, true}) {
    const CallCheck r = check_call_output(c, 0, 0, 0, 0, got, {upstream});
    CHECK(r.num_mismatches == 2);
    CHECK(r.num_nan == 2);
    REQUIRE(r.first_mismatches.size() == 2u);
    CHECK(std::isinf(r.first_mismatches[0].err_ulps));
    CHECK(r.first_mismatches[1].likely_source == "poison (unwritten)");
  }
  CHECK(check_call_output(c, 0, 0, 0, 0, got, {}, 1).first_mismatches.size() == 1u);
  // Every element unwritten: all counted, the first 8 reported.
  std::vector<uint8_t> poison(got.size(), 0xFF);
  const CallCheck all = check_call_output(c, 0, 0, 0, 0, poison);
  CHECK(all.num_mismatches == all.num_checked);
  CHECK(all.first_mismatches.size() == 8u);
}

TEST_CASE("likely source: an unweighted partial, a dropped source") {
  const Case c =
      make(4, DType::kFp16, DType::kFp32, LseBase::k2, EmptyPattern::kNone, SpecialLse::kNone);
  const Format f = format_of(c.out_dtype);
  const OpGenerator gen(c, 0, 0);
  const int gr = 2, h = 1, d = 9;
  std::vector<double> x(64);
  // Find a token where source 1's raw value and the drop-2 combine are both
  // clearly wrong and clearly different from each other.
  const auto good = fp32_kernel(c, 0, gr, 0);
  const auto drop2 = fp32_kernel(c, 0, gr, 0, 2);
  int token = -1;
  for (int t = 0; t < c.num_tokens && token < 0; ++t) {
    gen.output_row(1, t, gr * 2 + h, x.data());
    const double want = read_value(f, good.data(), elem(c, t, h, d));
    const double dv = read_value(f, drop2.data(), elem(c, t, h, d));
    if (std::fabs(x[d] - want) > 0.1 && std::fabs(dv - want) > 0.1 && std::fabs(dv - x[d]) > 0.1) {
      token = t;
    }
  }
  REQUIRE(token >= 0);
  auto got = good;
  write_value(f, got.data(), elem(c, token, h, d), x[d]);
  CallCheck r = check_call_output(c, 0, gr, gr, 0, got);
  REQUIRE(r.first_mismatches.size() == 1u);
  CHECK(r.first_mismatches[0].likely_source == "source 1's partial, unweighted");
  got = good;
  write_bits(f, got.data(), elem(c, token, h, d), read_bits(f, drop2.data(), elem(c, token, h, d)));
  r = check_call_output(c, 0, gr, gr, 0, got);
  REQUIRE(r.first_mismatches.size() == 1u);
  CHECK(r.first_mismatches[0].likely_source == "combine without source 2");
  // An arbitrary wrong value matches nothing.
  got = good;
  write_value(f, got.data(), elem(c, token, h, d), 123.0);
  r = check_call_output(c, 0, gr, gr, 0, got);
  REQUIRE(r.first_mismatches.size() == 1u);
  CHECK(r.first_mismatches[0].likely_source == "");
}

TEST_CASE("all-masked rows must be exactly zero") {
  const Case c =
      make(4, DType::kBf16, DType::kFp32, LseBase::kE, EmptyPattern::kAll, SpecialLse::kNone);
  const Format f = format_of(c.out_dtype);
  const OpGenerator gen(c, 0, 0);
  int token = -1;
  for (int t = 0; t < c.num_tokens && token < 0; ++t) {
    if (gen.row_masked(0, t)) token = t;  // kAll: then every source is masked
  }
  REQUIRE(token >= 0);
  auto got = fp32_kernel(c, 0, 0, 0);
  CHECK(read_bits(f, got.data(), elem(c, token, 0, 0)) == 0u);
  write_bits(f, got.data(), elem(c, token, 0, 0), 0x8000u);  // -0 is still zero
  CHECK(check_call_output(c, 0, 0, 0, 0, got).num_mismatches == 0);
  write_bits(f, got.data(), elem(c, token, 0, 1), 0x0001u);  // the smallest subnormal is not
  for (bool upstream : {false, true}) {
    const CallCheck r = check_call_output(c, 0, 0, 0, 0, got, {upstream});
    CHECK(r.num_mismatches == 1);
    REQUIRE(r.first_mismatches.size() == 1u);
    CHECK(r.first_mismatches[0].tolerance_ulps == 0);
  }
}

TEST_CASE("a wrong-sized output is a harness error") {
  const Case c =
      make(2, DType::kBf16, DType::kFp32, LseBase::kE, EmptyPattern::kNone, SpecialLse::kNone);
  std::vector<uint8_t> got(10);
  CHECK_THROWS_AS(check_call_output(c, 0, 0, 0, 0, got), HarnessError);
}

TEST_CASE("results travel as JSON, NaN and infinities included") {
  RankCaseResult r;
  r.case_id = "dcp2-tiny-bf16-lsefp32-base2-t1-contig-emptynone-ub1-eager1-s000001";
  r.rank = 3;
  r.num_checked = 1234;
  r.num_mismatches = 2;
  r.num_nan = 1;
  r.output_hash = 0xFEDCBA9876543210ull;
  r.elapsed_ms = 1.5;
  r.error_kind = "kernel";
  Mismatch m;
  m.rank = 3;
  m.token = 4;
  m.got = std::nan("");
  m.want = 0.25;
  m.err_ulps = INFINITY;
  m.tolerance_ulps = 0.51;
  m.likely_source = "poison (unwritten)";
  r.first_mismatches = {m, m};
  r.first_mismatches[1].got = -INFINITY;
  const nlohmann::json j = r;
  const std::string text = j.dump();
  CHECK(text.find("null") == std::string::npos);
  const RankCaseResult back = nlohmann::json::parse(text).get<RankCaseResult>();
  CHECK(back.case_id == r.case_id);
  CHECK(back.output_hash == r.output_hash);
  CHECK(back.num_checked == 1234);
  CHECK(back.error_kind == "kernel");
  REQUIRE(back.first_mismatches.size() == 2u);
  CHECK(std::isnan(back.first_mismatches[0].got));
  CHECK(back.first_mismatches[0].want == 0.25);
  CHECK(std::isinf(back.first_mismatches[0].err_ulps));
  CHECK(back.first_mismatches[1].got == -INFINITY);
  CHECK(back.first_mismatches[0].likely_source == "poison (unwritten)");
  CHECK(to_string(CaseStatus::kPass) == "pass");
  CHECK(to_string(CaseStatus::kFail) == "fail");
  CHECK(to_string(CaseStatus::kError) == "error");
  CHECK(to_string(CaseStatus::kSkipped) == "skipped");
}

}  // namespace
}  // namespace dcp
