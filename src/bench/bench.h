// `dcp-check bench`: the pure part (no CUDA, no processes). What a benchmark
// asks for (BenchSpec), what it measured (BenchResult), the upstream reduction
// (max over ranks per repeat, median over repeats), the bytes each rank moves,
// the shared-GPU refusal rules, and the table / CSV / JSON renderings.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "backend.h"
#include "case.h"
#include "exit_code.h"
#include "results.h"

namespace dcp {

inline constexpr int kDefaultOpsPerGraph = 10;
inline constexpr int kDefaultBenchRepeats = 7;
inline constexpr int kDefaultBenchReplays = 100;
inline constexpr int kDefaultBenchWarmupReplays = 10;
inline constexpr const char* kDefaultBenchTokens = "1,8,16,32,64,128";

// The two sides of the table: kDirect is the kernel under test (--kernel; the
// built-in direct kernel by default), kStock the NCCL baseline.
enum class Impl : uint8_t { kDirect, kStock };

struct BenchSpec {
  std::vector<int> tokens;                  // ascending as given
  std::vector<Impl> impls;                  // what actually runs (after the shared-GPU rules)
  int ops_per_graph = kDefaultOpsPerGraph;  // K: ops captured in one graph
  int repeats = kDefaultBenchRepeats;       // M
  int replays = kDefaultBenchReplays;       // R: graph replays per repeat
  int warmup_replays = kDefaultBenchWarmupReplays;
};

// One (tokens, impl) measurement.
struct BenchPoint {
  int tokens = 0;
  Impl impl = Impl::kDirect;
  std::vector<std::vector<double>> rank_us;  // [rank][repeat]: per-op microseconds
  std::vector<double> max_us;                // [repeat]: max over ranks
  double median_us = 0;                      // median of max_us: the reported number
  int64_t bytes_per_rank = 0;                // per op, to peers
  double bandwidth_gbs = 0;                  // bytes_per_rank / median_us
  CaseResult check;                          // the output check after timing
};

struct BenchResult {
  int world = 0;
  int dcp_size = 0;
  Geometry geometry;
  BenchSpec spec;
  bool meaningful = true;          // false: ranks shared a GPU (--allow-shared-gpu)
  std::vector<std::string> notes;  // e.g. why stock was skipped
  std::vector<BenchPoint> points;
  bool all_checks_passed() const;
};

// The exit_code() findings of a bench: each point's output check, as a case.
Findings bench_findings(const BenchResult& r);

// Which impls run. Throws UsageError (exit 2) when ranks share a GPU and the
// caller did not allow it, or asked for stock only; with both and an allowed
// shared GPU, stock is dropped and *note says why.
std::vector<Impl> bench_impls(std::string_view impl_flag, bool ranks_share_gpu,
                              bool allow_shared_gpu, std::string* note);
// Parses "1,8,16": each in [1, max_tokens], no duplicates. Throws UsageError.
std::vector<int> parse_bench_tokens(std::string_view text, int max_tokens);
void validate_bench_counts(const BenchSpec& spec);  // K, M, R ranges; throws UsageError

double median(std::vector<double> values);  // of a non-empty list; mean of the two middles
// rank_us[rank][repeat] -> per repeat max over ranks. Throws HarnessError on ragged input.
std::vector<double> max_over_ranks(const std::vector<std::vector<double>>& rank_us);
// Payload (T*H*D output elements) plus LSE (T*H fp32) to each of the W-1 peers.
int64_t bench_bytes_per_rank(int tokens, int dcp_size, int heads_per_rank, int head_dim,
                             DType out_dtype);
double bandwidth_gbs(int64_t bytes, double us);  // GB/s (1e9 bytes per second); 0 if us <= 0
// Fills max_us, median_us, bytes_per_rank and bandwidth_gbs from rank_us.
void reduce_point(BenchPoint& p, int dcp_size, const Geometry& g, DType out_dtype);

// The Case a bench point times and then checks (eager, one call, no masking).
Case bench_case(int dcp_size, const Geometry& g, int tokens);

std::string bench_table(const BenchResult& r);
std::string bench_csv(const BenchResult& r);
nlohmann::json bench_json(const BenchResult& r);

}  // namespace dcp
