// The compute-sanitizer report parser on recorded report texts, one per tool,
// in the layout NVIDIA documents (compute-sanitizer's user manual: memcheck,
// racecheck, synccheck and initcheck examples), with the worker's own output
// interleaved, the log read while it grows, and a summary that counts more
// than was printed.
#include "sanitizer.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace dcp {
namespace {

constexpr const char* kMemcheckOutOfBounds = R"(========= COMPUTE-SANITIZER
dcp-check worker rank 1: this line is the worker's own and not the sanitizer's
========= Invalid __global__ read of size 4 bytes
=========     at void dcp::direct_dispatch_kernel<(dcp::ElemType)0, (bool)1>(dcp::DirectA2AParams, int, int)+0x1f0 in /src/kernels/direct_a2a.cu:178
=========     by thread (0,0,0) in block (0,1,0)
=========     Address 0x7f4c3e000400 is out of bounds
=========     and is 1,099,511,627,776 bytes after the nearest allocation at 0x7e4c3e000000 of size 1,024 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame: [0x2e5f7b] in libcuda.so.1
=========     Host Frame: [0x14a2d] in dcp-check
=========
========= Invalid __global__ write of size 16 bytes
=========     at void dcp::direct_combine_kernel<(dcp::ElemType)2, (bool)1>(dcp::DirectA2AParams, int)+0x9c0
=========     by thread (96,0,0) in block (47,0,0)
=========     Address 0x7f4c3e7ff000 is misaligned
=========
========= ERROR SUMMARY: 2 errors
)";

constexpr const char* kRacecheck = R"(========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at sumKernel(int *, int *)+0x150 in block_error.cu:41
=========     and Read access at sumKernel(int *, int *)+0x1b0 in block_error.cu:40 [248 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
)";

constexpr const char* kSynccheckOld = R"(========= CUDA-MEMCHECK
========= Barrier error detected. Divergent thread(s) in warp
=========     at 0x00000058 in divergence.cu:7:threadDivergence(int*)
=========     by thread (37,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 1 error
)";

constexpr const char* kInitcheck = R"(========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at vectorAdd(int *)+0x70
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f2a5e600000
=========
========= ERROR SUMMARY: 1 error
)";

TEST_CASE("memcheck: kernel, access, size, address and where, thread and block") {
  const auto f = parse_sanitizer_report(kMemcheckOutOfBounds, "memcheck", 1);
  REQUIRE(f.size() == 2);
  CHECK(f[0].tool == "memcheck");
  CHECK(f[0].rank == 1);
  CHECK(f[0].kind == "Invalid __global__ read of size 4 bytes");
  CHECK(f[0].access == "read");
  CHECK(f[0].access_size == 4);
  CHECK(f[0].kernel ==
        "void dcp::direct_dispatch_kernel<(dcp::ElemType)0, (bool)1>(dcp::DirectA2AParams, int, "
        "int)");
  CHECK(f[0].location == "/src/kernels/direct_a2a.cu:178");
  CHECK(f[0].thread == "(0,0,0)");
  CHECK(f[0].block == "(0,1,0)");
  CHECK(f[0].address == "0x7f4c3e000400");
  CHECK(f[0].address_note.starts_with("is out of bounds (is 1,099,511,627,776 bytes after"));
  const std::string line = f[0].describe();
  CHECK(line.find("in kernel 'void dcp::direct_dispatch_kernel") != std::string::npos);
  CHECK(line.find("address 0x7f4c3e000400 is out of bounds") != std::string::npos);
  CHECK(line.find("by thread (0,0,0) in block (0,1,0)") != std::string::npos);
  // Without line info (a plugin built without -lineinfo) the location stays empty.
  CHECK(f[1].access == "write");
  CHECK(f[1].access_size == 16);
  CHECK(f[1].location.empty());
  CHECK(f[1].describe().find("no file:line: the kernel was built without -lineinfo") !=
        std::string::npos);
  CHECK(f[1].kernel.find("direct_combine_kernel") != std::string::npos);
  CHECK(f[1].address_note == "is misaligned");
}

// As CUDA 13's compute-sanitizer printed it on the H100 for read-far-past-input.
TEST_CASE("memcheck: the address also when the tool says 'Access to'") {
  const auto f = parse_sanitizer_report(
      "========= Invalid __global__ read of size 4 bytes\n"
      "=========     at void dcp::<unnamed>::direct_dispatch_kernel<(dcp::ElemType)2, (bool)1>"
      "(dcp::DirectA2AParams, int, int)+0x270 in direct_a2a.cu:181\n"
      "=========     by thread (0,0,0) in block (0,0,0)\n"
      "=========     Access to 0x80ba6b200600 is out of bounds\n"
      "=========     and is 1,089,443,132,929 bytes after the nearest allocation at "
      "0x7fbcc3410000 of size 4,096 bytes\n"
      "=========\n",
      "memcheck", 0);
  REQUIRE(f.size() == 1);
  CHECK(f[0].address == "0x80ba6b200600");
  CHECK(f[0].address_note.starts_with("is out of bounds (is 1,089,443,132,929 bytes after"));
  CHECK(f[0].location == "direct_a2a.cu:181");
  CHECK(f[0].describe().find("address 0x80ba6b200600 is out of bounds") != std::string::npos);
}

TEST_CASE("racecheck: both accesses and the kernel from the headline") {
  const auto f = parse_sanitizer_report(kRacecheck, "racecheck", 0);
  REQUIRE(f.size() == 1);
  CHECK(f[0].access == "race");
  CHECK(f[0].kernel == "sumKernel(int *, int *)");
  CHECK(f[0].location == "block_error.cu:41");
  CHECK(f[0].kind.find("Write access") != std::string::npos);
  CHECK(f[0].kind.find("/ Read access") != std::string::npos);
}

TEST_CASE("synccheck, older layout: the kernel after file:line") {
  const auto f = parse_sanitizer_report(kSynccheckOld, "synccheck", 3);
  REQUIRE(f.size() == 1);
  CHECK(f[0].access == "barrier");
  CHECK(f[0].kernel == "threadDivergence(int*)");
  CHECK(f[0].location == "divergence.cu:7");
  CHECK(f[0].thread == "(37,0,0)");
  CHECK(f[0].block == "(0,0,0)");
}

TEST_CASE("initcheck: an uninitialised read") {
  const auto f = parse_sanitizer_report(kInitcheck, "initcheck", 0);
  REQUIRE(f.size() == 1);
  CHECK(f[0].kind == "Uninitialized __global__ memory read of size 4 bytes");
  CHECK(f[0].access == "read");
  CHECK(f[0].kernel == "vectorAdd(int *)");
  CHECK(f[0].address == "0x7f2a5e600000");
}

TEST_CASE("a clean run has no finding, and a summary counting unprinted errors is never dropped") {
  CHECK(parse_sanitizer_report("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n",
                               "memcheck", 0)
            .empty());
  CHECK(parse_sanitizer_report("", "memcheck", 0).empty());
  const auto f = parse_sanitizer_report(
      "========= COMPUTE-SANITIZER\n========= Something new in a later release\n"
      "========= ERROR SUMMARY: 3 errors\n",
      "memcheck", 2);
  REQUIRE(f.size() == 1);
  CHECK(f[0].kind.starts_with("3 errors counted"));
  CHECK(f[0].rank == 2);
  const auto g = parse_sanitizer_report(
      std::string(kInitcheck).replace(std::string(kInitcheck).find("1 error"), 7, "5 errors"),
      "initcheck", 0);
  REQUIRE(g.size() == 2);
  CHECK(g[1].kind.starts_with("4 more errors counted but not printed"));
}

TEST_CASE("the log read while it grows: a record is reported once it is complete") {
  const std::string text = kMemcheckOutOfBounds;
  const size_t cut = text.find("=========     by thread (96");  // inside the second record
  const std::string first_part = text.substr(0, cut);
  CHECK(complete_records_end(first_part) == text.find("========= Invalid __global__ write"));
  const std::string path = std::filesystem::temp_directory_path() /
                           ("dcp-sanitizer-test-" + std::to_string(getpid()) + ".log");
  { std::ofstream(path) << first_part; }
  SanitizerLog log(path, "memcheck", 1);
  auto a = log.read_new();
  REQUIRE(a.size() == 1);
  CHECK(a[0].access == "read");
  CHECK(log.read_new().empty());  // nothing new completed
  { std::ofstream(path, std::ios::app) << text.substr(cut); }
  auto b = log.read_new(/*final=*/true);
  REQUIRE(b.size() == 1);
  CHECK(b[0].access == "write");
  CHECK(b[0].thread == "(96,0,0)");
  CHECK(log.summary_errors() == 2);
  std::remove(path.c_str());
}

TEST_CASE("the argv prefix: tool, error exit code, print limit, API errors off, log file") {
  const auto argv = sanitizer_argv_prefix("/cs", "racecheck", "/run/s.log");
  REQUIRE(argv.size() == 11);
  CHECK(argv[0] == "/cs");
  CHECK(argv[1] == "--tool");
  CHECK(argv[2] == "racecheck");
  CHECK(argv[4] == std::to_string(kSanitizerErrorExitCode));
  CHECK(argv[7] == "--report-api-errors");
  CHECK(argv[8] == "no");
  CHECK(argv[10] == "/run/s.log");
  CHECK(is_sanitizer_tool("initcheck"));
  CHECK_FALSE(is_sanitizer_tool("leakcheck"));
}

}  // namespace
}  // namespace dcp
