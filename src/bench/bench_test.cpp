#include "bench.h"

#include <doctest/doctest.h>

#include "errors.h"
#include "usage_message_for_tests.h"
#include "geometry.h"

namespace dcp {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

BenchPoint point(int tokens, Impl impl, double us) {
  BenchPoint p;
  p.tokens = tokens;
  p.impl = impl;
  p.median_us = us;
  p.max_us = {us};
  p.bytes_per_rank = 1000;
  p.bandwidth_gbs = bandwidth_gbs(1000, us);
  p.check.status = CaseStatus::kPass;
  return p;
}

BenchResult kimi_result(bool meaningful) {
  BenchResult r;
  r.world = 4;
  r.dcp_size = 4;
  r.geometry = *find_geometry("kimi");
  r.spec.tokens = {1, 8};
  r.meaningful = meaningful;
  r.points = {point(1, Impl::kStock, 18.776), point(1, Impl::kDirect, 12.504),
              point(8, Impl::kDirect, 12.711)};
  return r;
}

TEST_CASE("median: odd, even, unsorted") {
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(median({7.0}) == 7.0);
  CHECK_THROWS_AS(median({}), HarnessError);
}

TEST_CASE("max over ranks per repeat, then the median of those") {
  BenchPoint p;
  p.tokens = 8;
  // rank 1 is slowest in repeats 0 and 2, rank 0 in repeat 1.
  p.rank_us = {{10, 30, 11}, {12, 20, 15}};
  const Geometry g = *find_geometry("kimi");
  reduce_point(p, 2, g, DType::kBf16);
  CHECK(p.max_us == std::vector<double>{12, 30, 15});
  CHECK(p.median_us == 15);  // not the median of rank 0 (11) nor of all values
  CHECK_THROWS_AS(max_over_ranks({{1, 2}, {1}}), HarnessError);
}

TEST_CASE("bytes each rank moves: payload plus fp32 LSE to every peer") {
  // Kimi TP4/DCP4: H=16, D=512, bf16: per peer T*16*(512*2+4) bytes, 3 peers.
  CHECK(bench_bytes_per_rank(1, 4, 16, 512, DType::kBf16) == 3 * 16 * (1024 + 4));
  CHECK(bench_bytes_per_rank(128, 4, 16, 512, DType::kBf16) == 128 * 3 * 16 * 1028);
  CHECK(bench_bytes_per_rank(8, 1, 16, 512, DType::kBf16) == 0);
  // 1e6 bytes in 1000 us is 1 GB/s.
  CHECK(bandwidth_gbs(1'000'000, 1000.0) == doctest::Approx(1.0));
  CHECK(bandwidth_gbs(1000, 0) == 0);
}

TEST_CASE("token list parsing") {
  CHECK(parse_bench_tokens("1,8,16,32,64,128", 128) == std::vector<int>{1, 8, 16, 32, 64, 128});
  CHECK(contains(usage_message([] { parse_bench_tokens("1,256", 128); }), "max_tokens=128"));
  CHECK(contains(usage_message([] { parse_bench_tokens("0", 128); }), "outside"));
  CHECK(contains(usage_message([] { parse_bench_tokens("1,,2", 128); }), "not a whole number"));
  CHECK(contains(usage_message([] { parse_bench_tokens("8,8", 128); }), "twice"));
  CHECK(contains(usage_message([] { parse_bench_tokens("x", 128); }), "not a whole number"));
}

TEST_CASE("count ranges") {
  BenchSpec s;
  s.tokens = {1};
  CHECK_NOTHROW(validate_bench_counts(s));
  s.replays = 0;
  CHECK(contains(usage_message([&] { validate_bench_counts(s); }), "--replays 0"));
  s.replays = 1;
  s.tokens.clear();
  CHECK(contains(usage_message([&] { validate_bench_counts(s); }), "--tokens"));
}

TEST_CASE("shared-GPU refusal rules") {
  std::string note;
  // Distinct GPUs: whatever was asked.
  CHECK(bench_impls("both", false, false, &note) == std::vector<Impl>{Impl::kStock, Impl::kDirect});
  CHECK(bench_impls("stock", false, false, &note) == std::vector<Impl>{Impl::kStock});
  CHECK(note.empty());
  // Shared GPU without the flag: refused whatever the impl.
  for (const char* impl : {"direct", "stock", "both"}) {
    CHECK(contains(usage_message([&] { bench_impls(impl, true, false, &note); }),
                   "--allow-shared-gpu"));
  }
  // Allowed: stock alone is still impossible (NCCL), both drops stock and says so.
  CHECK(contains(usage_message([&] { bench_impls("stock", true, true, &note); }),
                 "one GPU per rank"));
  CHECK(bench_impls("both", true, true, &note) == std::vector<Impl>{Impl::kDirect});
  CHECK(contains(note, "stock skipped"));
  CHECK(contains(usage_message([&] { bench_impls("fast", false, false, &note); }), "--impl"));
}

TEST_CASE("table: upstream columns, reduction and speedup only where both ran") {
  const std::string t = bench_table(kimi_result(true));
  CHECK(contains(t, "stock us"));
  CHECK(contains(t, "reduction %"));
  CHECK(contains(t, "18.776"));
  CHECK(contains(t, "33.4%"));  // (18.776 - 12.504) / 18.776, as upstream
  CHECK(contains(t, "1.50x"));
  CHECK_FALSE(contains(t, "NOT MEANINGFUL"));
  // 8 tokens: direct only, so no reduction.
  const size_t row8 = t.find("\n     8 |");
  REQUIRE(row8 != std::string::npos);
  CHECK(contains(t.substr(row8, t.find('\n', row8 + 1) - row8), "12.711"));
}

TEST_CASE("not meaningful: every rendering says so") {
  const BenchResult r = kimi_result(false);
  CHECK(contains(bench_table(r), "NOT MEANINGFUL"));
  CHECK(contains(bench_table(r), "direct us*"));
  CHECK(bench_json(r)["meaningful"] == false);
  CHECK(bench_json(kimi_result(true))["meaningful"] == true);
  const std::string csv = bench_csv(r);
  CHECK(contains(csv, ",meaningful,"));
  CHECK(contains(csv, "1,direct,12.5040,1000,"));
  CHECK(contains(csv, ",pass,false,"));
}

TEST_CASE("json: table rows and points") {
  const nlohmann::json j = bench_json(kimi_result(true));
  CHECK(j["table"][0]["tokens"] == 1);
  CHECK(j["table"][0]["speedup"].get<double>() == doctest::Approx(18.776 / 12.504));
  CHECK(j["table"][1]["stock_us"].is_null());
  CHECK(j["points"].size() == 3);
  CHECK(j["method"]["ops_per_graph"] == kDefaultOpsPerGraph);
}

TEST_CASE("a failed output check is printed and fails the result") {
  BenchResult r = kimi_result(true);
  CHECK(r.all_checks_passed());
  r.points[1].check.status = CaseStatus::kFail;
  r.points[1].check.message = "3 of 8192 elements wrong";
  CHECK_FALSE(r.all_checks_passed());
  CHECK(contains(bench_table(r), "output check FAILED for direct at 1 tokens"));
}

TEST_CASE("the bench case is the upstream shape and round-trips as an id") {
  const Geometry g = *find_geometry("kimi");
  const Case c = bench_case(4, g, 16);
  CHECK(c.out_dtype == DType::kBf16);
  CHECK(c.lse_dtype == DType::kFp32);
  CHECK(c.num_tokens == 16);
  std::string err;
  const auto back = parse_case_id(format_case_id(c), &err);
  REQUIRE(back.has_value());
  CHECK(*back == c);
}

}  // namespace
}  // namespace dcp
