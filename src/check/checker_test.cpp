#include "checker.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "combine_reference.h"
#include "errors.h"
#include "generator.h"
#include "geometry.h"
#include "mix.h"
#include "numeric.h"
#include "random_case.h"
#include "simd.h"
#include "thread_pool.h"

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

bool same_double(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Every field, bit for bit (NaN got values included).
void check_same(const CallCheck& a, const CallCheck& b) {
  CHECK(a.num_checked == b.num_checked);
  CHECK(a.num_mismatches == b.num_mismatches);
  CHECK(a.num_nan == b.num_nan);
  REQUIRE(a.first_mismatches.size() == b.first_mismatches.size());
  for (size_t i = 0; i < a.first_mismatches.size(); ++i) {
    const Mismatch &x = a.first_mismatches[i], &y = b.first_mismatches[i];
    CAPTURE(i);
    CHECK(x.rank == y.rank);
    CHECK(x.op_idx == y.op_idx);
    CHECK(x.token == y.token);
    CHECK(x.head == y.head);
    CHECK(x.dim == y.dim);
    CHECK(same_double(x.got, y.got));
    CHECK(same_double(x.want, y.want));
    CHECK(same_double(x.err_ulps, y.err_ulps));
    CHECK(same_double(x.tolerance_ulps, y.tolerance_ulps));
    CHECK(x.likely_source == y.likely_source);
  }
}

struct ForcedLevel {
  explicit ForcedLevel(simd::Level l) { simd::force_level(l); }
  ~ForcedLevel() { simd::clear_forced_level(); }
};

TEST_CASE("every thread count and SIMD level gives the 1-thread result, wrong and NaN outputs too") {
  int64_t mismatches = 0, named = 0, reported = 0;
  for (uint64_t i = 0; i < 12; ++i) {
    const char* geo = i % 3 == 2 ? "kimi-k3" : "tiny";
    Case c = random_case(0xc4ec, i, 8, *find_geometry(geo));
    c.num_tokens = std::min(c.num_tokens, 24);
    CAPTURE(format_case_id(c));
    const int gi = static_cast<int>(i % 2), gr = static_cast<int>(i % c.dcp_size),
              op = static_cast<int>(i % 3);
    const Format f = format_of(c.out_dtype);
    const OpGenerator gen(c, gi, op);
    const auto good = fp32_kernel(c, gi, gr, op);
    const size_t n = good.size() / static_cast<size_t>(format_bytes(f));
    const int hc = c.geometry.heads_per_rank, dc = c.geometry.head_dim;
    Rng rng(hash_all(0x7e57, i));
    for (int variant = 0; variant < 4; ++variant) {
      auto got = good;
      // 0: correct; 1: a few planted wrong values; 2: many, NaN among them;
      // 3: every element unwritten.
      const int plants = variant == 0 ? 0 : variant == 1 ? 5 : 300;
      for (int k = 0; k < plants; ++k) {
        const size_t e = static_cast<size_t>(rng.next() % n);
        const uint32_t b = read_bits(f, got.data(), e);
        switch (rng.below(6)) {
          case 0:
            write_bits(f, got.data(), e, b + static_cast<uint32_t>(rng.between(1, 3)));
            break;
          case 1:
            write_bits(f, got.data(), e, quiet_nan_bits(f));
            break;
          case 2:
            write_bits(f, got.data(), e, all_ones_bits(f));
            break;
          case 3:
            write_bits(f, got.data(), e, 0);
            break;
          case 4: {  // a raw partial: "source s's partial, unweighted"
            const int t = static_cast<int>(e / static_cast<size_t>(hc * dc));
            const int h = static_cast<int>(e / static_cast<size_t>(dc) % static_cast<size_t>(hc));
            const double v = gen.output_value(rng.below(c.dcp_size), t, gr * hc + h,
                                              static_cast<int>(e % static_cast<size_t>(dc)));
            if (std::isfinite(v)) write_value(f, got.data(), e, v);
            break;
          }
          default:
            write_value(f, got.data(), e, read_value(f, got.data(), e) * 1.5 + 0.01);
            break;
        }
      }
      if (variant == 3) std::fill(got.begin(), got.end(), uint8_t{0xFF});
      for (bool upstream : {false, true}) {
        for (int max_reported : {8, 3}) {
          CAPTURE(variant);
          CAPTURE(upstream);
          CheckProfile serial;
          serial.upstream = upstream;
          const CallCheck want = check_call_output(c, gi, gr, gr + 8, op, got, serial, max_reported);
          if (variant > 0) CHECK(want.num_mismatches > 0);
          mismatches += want.num_mismatches;
          reported += static_cast<int64_t>(want.first_mismatches.size());
          for (const Mismatch& m : want.first_mismatches) named += !m.likely_source.empty();
          for (simd::Level level : {simd::Level::kV4, simd::Level::kV3, simd::Level::kBaseline}) {
            const ForcedLevel forced(level);
            for (int threads : {1, 2, 3, 4, 7}) {
              CAPTURE(static_cast<int>(simd::level()));
              CAPTURE(threads);
              CheckProfile p = serial;
              p.num_threads = threads;
              check_same(check_call_output(c, gi, gr, gr + 8, op, got, p, max_reported), want);
            }
          }
        }
      }
    }
  }
  CHECK(mismatches > 10'000);
  CHECK(reported > 100);
  CHECK(named > 10);  // likely sources were compared, not just empty strings
}

// A plain element-by-element check, independent of check_call_output's rows,
// lanes and threads: every source value from the per-value formula
// (output_value), the scalar combine_row, element_tolerance per element.
CallCheck plain_check(const Case& c, int gi, int gr, int global_rank, int op,
                      const std::vector<uint8_t>& got, bool upstream) {
  const OpGenerator gen(c, gi, op);
  const Format f = format_of(c.out_dtype);
  const int w = c.dcp_size, hc = c.geometry.heads_per_rank, dc = c.geometry.head_dim;
  const LogBase base = c.lse_base == LseBase::kE ? LogBase::kE : LogBase::k2;
  CallCheck out;
  std::vector<std::vector<double>> x(static_cast<size_t>(w), std::vector<double>(dc));
  std::vector<const double*> ptrs(static_cast<size_t>(w));
  std::vector<SourceLse> lse(static_cast<size_t>(w));
  std::vector<float> want32(static_cast<size_t>(dc));
  for (int t = 0; t < c.num_tokens; ++t) {
    for (int h = 0; h < hc; ++h) {
      const int head = gr * hc + h;
      for (int s = 0; s < w; ++s) {
        const auto si = static_cast<size_t>(s);
        lse[si] = {gen.lse_value(s, t, head), gen.row_masked(s, t)};
        for (int d = 0; d < dc; ++d) x[si][static_cast<size_t>(d)] = gen.output_value(s, t, head, d);
        ptrs[si] = x[si].data();
      }
      const CombineRow row = combine_row(lse, base, ptrs, dc);
      if (upstream) combine_row_fp32(lse, base, ptrs, dc, want32.data());
      for (int d = 0; d < dc; ++d) {
        const auto di = static_cast<size_t>(d);
        const double g = read_value(f, got.data(), (static_cast<size_t>(t) * hc + h) * dc + di);
        const double want = upstream ? want32[di] : row.out[di];
        volatile double upstream_rel = 3e-2 * std::fabs(want);  // never fused into an FMA
        const double tol = row.weights.all_masked ? 0
                           : upstream ? 3e-2 + upstream_rel
                                      : element_tolerance(c.out_dtype, want, w, row.abs_sum[di],
                                                          row.weights.lse_magnitude);
        ++out.num_checked;
        if (!std::isnan(g) && std::fabs(g - want) <= tol) continue;
        ++out.num_mismatches;
        out.num_nan += std::isnan(g);
        if (out.first_mismatches.size() < 8) {
          Mismatch m;
          m.token = t;
          m.head = h;
          m.dim = d;
          m.got = g;
          m.want = want;
          m.tolerance_ulps = tol / ulp_of(f, want);
          out.first_mismatches.push_back(m);
        }
      }
    }
  }
  return out;
}

TEST_CASE("the checker agrees with a plain element-by-element check") {
  int64_t mismatches = 0;
  for (uint64_t i = 0; i < 16; ++i) {
    Case c = random_case(0x9a1f, i, 8, *find_geometry("tiny"));
    // Rows longer than the value table's pad: built (and wrapped), not fused.
    if (i % 8 == 5) c.geometry.head_dim = 2048;
    CAPTURE(format_case_id(c));
    const int gi = static_cast<int>(i % 2), gr = static_cast<int>(i % c.dcp_size), op = 1;
    const Format f = format_of(c.out_dtype);
    auto got = fp32_kernel(c, gi, gr, op, i % 4 == 3 ? 0 : -1);  // some drop source 0
    Rng rng(hash_all(0x9a1f, i));
    for (int k = 0; k < 6; ++k) {  // ulps off, NaN, zero
      const size_t e = static_cast<size_t>(rng.next() % (got.size() / 2));
      const uint32_t b = read_bits(f, got.data(), e);
      write_bits(f, got.data(), e, k % 3 == 0 ? b + 1 : k % 3 == 1 ? quiet_nan_bits(f) : 0u);
    }
    for (bool upstream : {false, true}) {
      CAPTURE(upstream);
      const CallCheck want = plain_check(c, gi, gr, gr, op, got, upstream);
      for (int threads : {1, 3}) {
        CheckProfile p;
        p.upstream = upstream;
        p.num_threads = threads;
        const CallCheck r = check_call_output(c, gi, gr, gr, op, got, p);
        CHECK(r.num_checked == want.num_checked);
        CHECK(r.num_mismatches == want.num_mismatches);
        CHECK(r.num_nan == want.num_nan);
        REQUIRE(r.first_mismatches.size() == want.first_mismatches.size());
        for (size_t k = 0; k < r.first_mismatches.size(); ++k) {
          const Mismatch &a = r.first_mismatches[k], &b = want.first_mismatches[k];
          CHECK(a.token == b.token);
          CHECK(a.head == b.head);
          CHECK(a.dim == b.dim);
          CHECK(same_double(a.got, b.got));
          CHECK(same_double(a.want, b.want));
          CHECK(same_double(a.tolerance_ulps, b.tolerance_ulps));
        }
      }
      mismatches += want.num_mismatches;
    }
  }
  CHECK(mismatches > 100);
}

TEST_CASE("checker_threads: the CPUs shared by the ranks of a host, or the override") {
  const int cpus = available_cpus();
  CHECK(checker_threads(1) == cpus);
  CHECK(checker_threads(4) == std::max(1, cpus / 4));
  CHECK(checker_threads(cpus + 1) == 1);
  CHECK(checker_threads(0) == cpus);
  CHECK(checker_threads(4, 3) == 3);
  CHECK(checker_threads(64, 16) == 16);
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
  r.failure = FailureKind::kTrap;
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
  CHECK(j["failure"] == "trap");
  CHECK(j["error_kind"] == "kernel");  // the older coarse class, for older readers
  CHECK(back.failure == FailureKind::kTrap);
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
