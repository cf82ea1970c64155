// checker_bench: times check_call_output on one kimi call (T = 128, W = 4,
// H = 16, D = 512, bf16 output, fp32 LSE) with 1, 2 and 4 threads, median of
// 5 runs each, and prints a table. Not a test (not registered with CTest).
//
//   checker_bench [--reps N] [--threads 1,2,4] [--fp16] [--empty] [--upstream] [--poison]
//
// --fp16 checks an fp16 output instead, --empty uses the kRandom empty-shard
// pattern (masked rows), --upstream the upstream profile, --poison an output
// whose every element is wrong (the slow, explaining path). The output checked
// is the float64 reference rounded once to the output dtype (it passes).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "checker.h"
#include "combine_reference.h"
#include "generator.h"
#include "geometry.h"
#include "numeric.h"
#include "simd.h"
#include "thread_pool.h"

namespace {

using namespace dcp;

std::vector<int> parse_list(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    v.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  std::vector<int> thread_counts = {1, 2, 4};
  bool fp16 = false, empty = false, upstream = false, poison = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--threads" && i + 1 < argc) {
      thread_counts = parse_list(argv[++i]);
    } else if (a == "--fp16") {
      fp16 = true;
    } else if (a == "--empty") {
      empty = true;
    } else if (a == "--upstream") {
      upstream = true;
    } else if (a == "--poison") {
      poison = true;
    } else {
      std::fprintf(stderr,
                   "usage: checker_bench [--reps N] [--threads 1,2,4] [--fp16] [--empty] "
                   "[--upstream] [--poison]\n");
      return 2;
    }
  }
  Case c;
  c.dcp_size = 4;
  c.geometry = *find_geometry("kimi");
  c.num_tokens = 128;
  c.out_dtype = fp16 ? DType::kFp16 : DType::kBf16;
  c.lse_dtype = DType::kFp32;
  c.lse_base = LseBase::kE;
  c.empty = empty ? EmptyPattern::kRandom : EmptyPattern::kNone;
  c.seed = 0x14c4ec;
  const int group_idx = 0, group_rank = 1, op = 0;
  std::vector<uint8_t> got = rounded_reference_output(c, group_idx, group_rank, op);
  if (poison) std::fill(got.begin(), got.end(), 0xFF);
  CheckProfile profile;
  profile.upstream = upstream;

  std::printf("checker_bench: %s, group rank %d, %zu elements per call%s%s\n",
              format_case_id(c).c_str(), group_rank,
              got.size() / static_cast<size_t>(format_bytes(format_of(c.out_dtype))),
              upstream ? ", upstream profile" : "", poison ? ", every element wrong" : "");
  const simd::Level level = simd::level();
  std::printf("available CPUs %d; checker_threads(4 ranks per host) = %d; SIMD %s\n",
              available_cpus(), checker_threads(4),
              level == simd::Level::kV4   ? "x86-64-v4 (AVX-512)"
              : level == simd::Level::kV3 ? "x86-64-v3 (AVX2)"
                                          : "baseline");
  std::printf("%8s %10s %10s %10s %9s  %s\n", "threads", "median_ms", "min_ms", "max_ms", "speedup",
              "result");
  double base_median = 0;
  CallCheck first;
  bool have_first = false;
  for (int threads : thread_counts) {
    profile.num_threads = threads;
    std::vector<double> ms;
    CallCheck r;
    r = check_call_output(c, group_idx, group_rank, group_rank, op, got, profile);  // warm up
    for (int i = 0; i < reps; ++i) {
      const auto start = std::chrono::steady_clock::now();
      r = check_call_output(c, group_idx, group_rank, group_rank, op, got, profile);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    if (base_median == 0) base_median = median;
    const bool same =
        !have_first ||
        (r.num_checked == first.num_checked && r.num_mismatches == first.num_mismatches &&
         r.num_nan == first.num_nan && r.first_mismatches.size() == first.first_mismatches.size());
    if (!have_first) {
      first = r;
      have_first = true;
    }
    std::printf("%8d %10.2f %10.2f %10.2f %8.2fx  checked %lld, mismatches %lld%s\n", threads,
                median, ms.front(), ms.back(), base_median / median,
                static_cast<long long>(r.num_checked), static_cast<long long>(r.num_mismatches),
                same ? "" : "  (DIFFERS from the first row!)");
    if (!same) return 1;
  }
  return 0;
}
