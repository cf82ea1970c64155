#include "bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "errors.h"

namespace dcp {
namespace {

constexpr int kMaxOpsPerGraph = 1000;
constexpr int kMaxRepeats = 1000;
constexpr int kMaxReplays = 100000;
constexpr uint64_t kBenchSeed = 0xbe9c;  // fixed: every bench times the same inputs

const char* impl_text(Impl i) { return i == Impl::kStock ? "stock" : "direct"; }

const BenchPoint* find_point(const BenchResult& r, int tokens, Impl impl) {
  for (const BenchPoint& p : r.points) {
    if (p.tokens == tokens && p.impl == impl) return &p;
  }
  return nullptr;
}

std::string us_cell(const BenchPoint* p) {
  return p == nullptr ? "-" : fmt::format("{:.3f}", p->median_us);
}

// Reduction and speedup of direct over stock, when both ran.
struct Comparison {
  bool valid = false;
  double reduction_pct = 0;
  double speedup = 0;
};
Comparison compare(const BenchPoint* stock, const BenchPoint* direct) {
  Comparison c;
  if (stock == nullptr || direct == nullptr || stock->median_us <= 0 || direct->median_us <= 0) {
    return c;
  }
  c.valid = true;
  c.reduction_pct = 100.0 * (stock->median_us - direct->median_us) / stock->median_us;
  c.speedup = stock->median_us / direct->median_us;
  return c;
}

}  // namespace

bool BenchResult::all_checks_passed() const {
  return std::all_of(points.begin(), points.end(),
                     [](const BenchPoint& p) { return p.check.status == CaseStatus::kPass; });
}

Findings bench_findings(const BenchResult& r) {
  std::vector<CaseResult> checks;
  for (const BenchPoint& p : r.points) checks.push_back(p.check);
  return findings_of(checks, 0);
}

std::vector<Impl> bench_impls(std::string_view impl_flag, bool ranks_share_gpu,
                              bool allow_shared_gpu, std::string* note) {
  std::vector<Impl> impls;
  if (impl_flag == "both") {
    impls = {Impl::kStock, Impl::kDirect};
  } else if (impl_flag == "stock") {
    impls = {Impl::kStock};
  } else if (impl_flag == "direct") {
    impls = {Impl::kDirect};
  } else {
    throw UsageError(fmt::format("--impl {}: must be direct, stock or both", impl_flag));
  }
  if (!ranks_share_gpu) return impls;
  if (!allow_shared_gpu) {
    throw UsageError(
        "ranks share a GPU here, so their kernels time-slice and a latency would measure the "
        "scheduler, not the kernel: run bench with one GPU per rank (--world <= number of GPUs), "
        "or pass --allow-shared-gpu to run anyway with every number labelled not meaningful");
  }
  if (impl_flag == "stock") {
    throw UsageError(
        "--impl stock: the stock path uses NCCL, which needs one GPU per rank, and ranks share a "
        "GPU here: use as many GPUs as ranks, or --impl direct");
  }
  if (impl_flag == "both") {
    impls = {Impl::kDirect};
    if (note != nullptr) {
      *note =
          "stock skipped: the stock path uses NCCL, which needs one GPU per rank, and ranks "
          "share a GPU here";
    }
  }
  return impls;
}

std::vector<int> parse_bench_tokens(std::string_view text, int max_tokens) {
  std::vector<int> tokens;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    int value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size()) {
      throw UsageError(
          fmt::format("--tokens {}: '{}' is not a whole number (use e.g. 1,8,16)", text, item));
    }
    if (value < 1 || value > max_tokens) {
      throw UsageError(
          fmt::format("--tokens {}: {} is outside [1, max_tokens={}]", text, value, max_tokens));
    }
    if (std::find(tokens.begin(), tokens.end(), value) != tokens.end()) {
      throw UsageError(fmt::format("--tokens {}: {} is listed twice", text, value));
    }
    tokens.push_back(value);
    pos = comma + 1;
  }
  return tokens;
}

void validate_bench_counts(const BenchSpec& spec) {
  auto in_range = [](const char* flag, int v, int hi) {
    if (v < 1 || v > hi) throw UsageError(fmt::format("{} {}: must be in [1, {}]", flag, v, hi));
  };
  in_range("--ops-per-graph", spec.ops_per_graph, kMaxOpsPerGraph);
  in_range("--repeats", spec.repeats, kMaxRepeats);
  in_range("--replays", spec.replays, kMaxReplays);
  if (spec.tokens.empty()) throw UsageError("--tokens: give at least one token count");
}

double median(std::vector<double> values) {
  DCP_CHECK(!values.empty(), HarnessError, "median of no values");
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::vector<double> max_over_ranks(const std::vector<std::vector<double>>& rank_us) {
  DCP_CHECK(!rank_us.empty() && !rank_us.front().empty(), HarnessError, "no bench timings");
  std::vector<double> out(rank_us.front().size(), 0.0);
  for (const auto& per_rank : rank_us) {
    DCP_CHECK(per_rank.size() == out.size(), HarnessError, "ranks report {} and {} repeats",
              per_rank.size(), out.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::max(out[i], per_rank[i]);
  }
  return out;
}

int64_t bench_bytes_per_rank(int tokens, int dcp_size, int heads_per_rank, int head_dim,
                             DType out_dtype) {
  const int64_t elem = out_dtype == DType::kFp32 ? 4 : 2;
  const int64_t per_peer = int64_t{tokens} * heads_per_rank * (head_dim * elem + 4);
  return per_peer * (dcp_size - 1);
}

double bandwidth_gbs(int64_t bytes, double us) {
  return us > 0 ? static_cast<double>(bytes) / (us * 1e3) : 0.0;
}

void reduce_point(BenchPoint& p, int dcp_size, const Geometry& g, DType out_dtype) {
  p.max_us = max_over_ranks(p.rank_us);
  p.median_us = median(p.max_us);
  p.bytes_per_rank =
      bench_bytes_per_rank(p.tokens, dcp_size, g.heads_per_rank, g.head_dim, out_dtype);
  p.bandwidth_gbs = bandwidth_gbs(p.bytes_per_rank, p.median_us);
}

Case bench_case(int dcp_size, const Geometry& g, int tokens) {
  Case c;
  c.dcp_size = dcp_size;
  c.geometry = g;
  c.out_dtype = DType::kBf16;  // the upstream table: BF16, fp32 LSE
  c.lse_dtype = DType::kFp32;
  c.lse_base = LseBase::kE;
  c.num_tokens = tokens;
  c.mode = ExecMode::kEager;
  c.num_calls = 1;
  c.seed = kBenchSeed;
  return c;
}

std::string bench_table(const BenchResult& r) {
  std::string out;
  if (!r.meaningful) {
    out +=
        "NOT MEANINGFUL: ranks share a GPU (--allow-shared-gpu); these numbers measure "
        "time-slicing, not the kernel\n";
  }
  out += fmt::format(
      "world {}, DCP{}, geometry {} (H={} D={}), bf16 out, fp32 LSE; {} ops per graph, median of "
      "{} repeats of {} replays, max over ranks\n",
      r.world, r.dcp_size, r.geometry.name.empty() ? "custom" : r.geometry.name,
      r.geometry.heads_per_rank, r.geometry.head_dim, r.spec.ops_per_graph, r.spec.repeats,
      r.spec.replays);
  const std::string tag = r.meaningful ? "" : "*";
  out += fmt::format("{:>6} | {:>11} | {:>11} | {:>11} | {:>7} | {:>13} | {:>10} | {:>10}\n",
                     "tokens", "stock us" + tag, "direct us" + tag, "reduction %", "speedup",
                     "bytes/rank/op", "stock GB/s", "direct GB/s");
  for (int t : r.spec.tokens) {
    const BenchPoint* s = find_point(r, t, Impl::kStock);
    const BenchPoint* d = find_point(r, t, Impl::kDirect);
    const Comparison c = compare(s, d);
    const int64_t bytes = s ? s->bytes_per_rank : (d ? d->bytes_per_rank : 0);
    out +=
        fmt::format("{:>6} | {:>11} | {:>11} | {:>11} | {:>7} | {:>13} | {:>10} | {:>10}\n", t,
                    us_cell(s), us_cell(d), c.valid ? fmt::format("{:.1f}%", c.reduction_pct) : "-",
                    c.valid ? fmt::format("{:.2f}x", c.speedup) : "-", bytes,
                    s ? fmt::format("{:.1f}", s->bandwidth_gbs) : "-",
                    d ? fmt::format("{:.1f}", d->bandwidth_gbs) : "-");
  }
  if (!r.meaningful) out += "* not meaningful: ranks share a GPU\n";
  for (const std::string& n : r.notes) out += n + "\n";
  for (const BenchPoint& p : r.points) {
    if (p.check.status != CaseStatus::kPass) {
      out += fmt::format("output check FAILED for {} at {} tokens: {}\n  rerun: {}\n",
                         impl_text(p.impl), p.tokens, p.check.message, p.check.replay);
    }
  }
  return out;
}

std::string bench_csv(const BenchResult& r) {
  std::string out =
      "tokens,impl,median_us,bytes_per_rank,bandwidth_gbs,check,meaningful,repeats_max_us\n";
  for (const BenchPoint& p : r.points) {
    std::string reps;
    for (double v : p.max_us) reps += fmt::format("{}{:.4f}", reps.empty() ? "" : ";", v);
    out += fmt::format("{},{},{:.4f},{},{:.3f},{},{},{}\n", p.tokens, impl_text(p.impl),
                       p.median_us, p.bytes_per_rank, p.bandwidth_gbs,
                       p.check.status == CaseStatus::kPass ? "pass" : "fail",
                       r.meaningful ? "true" : "false", reps);
  }
  return out;
}

nlohmann::json bench_json(const BenchResult& r) {
  using nlohmann::json;
  json points = json::array();
  for (const BenchPoint& p : r.points) {
    points.push_back({{"tokens", p.tokens},
                      {"impl", impl_text(p.impl)},
                      {"median_us", p.median_us},
                      {"max_over_ranks_us", p.max_us},
                      {"rank_us", p.rank_us},
                      {"bytes_per_rank", p.bytes_per_rank},
                      {"bandwidth_gbs", p.bandwidth_gbs},
                      {"check", p.check.status == CaseStatus::kPass ? "pass" : "fail"},
                      {"check_message", p.check.message},
                      {"check_case", p.check.case_id}});
  }
  json rows = json::array();
  for (int t : r.spec.tokens) {
    const BenchPoint* s = find_point(r, t, Impl::kStock);
    const BenchPoint* d = find_point(r, t, Impl::kDirect);
    const Comparison c = compare(s, d);
    json row = {{"tokens", t},
                {"stock_us", s ? json(s->median_us) : json(nullptr)},
                {"direct_us", d ? json(d->median_us) : json(nullptr)}};
    row["reduction_pct"] = c.valid ? json(c.reduction_pct) : json(nullptr);
    row["speedup"] = c.valid ? json(c.speedup) : json(nullptr);
    rows.push_back(std::move(row));
  }
  return {{"meaningful", r.meaningful},
          {"world", r.world},
          {"dcp_size", r.dcp_size},
          {"geometry",
           {{"name", r.geometry.name},
            {"heads_per_rank", r.geometry.heads_per_rank},
            {"head_dim", r.geometry.head_dim},
            {"max_tokens", r.geometry.max_tokens}}},
          {"method",
           {{"ops_per_graph", r.spec.ops_per_graph},
            {"repeats", r.spec.repeats},
            {"replays", r.spec.replays},
            {"warmup_replays", r.spec.warmup_replays},
            {"statistic", "median over repeats of the max over ranks of per-op time"}}},
          {"out_dtype", "bf16"},
          {"lse_dtype", "fp32"},
          {"notes", r.notes},
          {"table", rows},
          {"points", points}};
}

}  // namespace dcp
