#include "launch_diagnosis.h"

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>

namespace dcp {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

struct Trace {
  std::unique_ptr<LaunchTable> table = std::make_unique<LaunchTable>();
  uint64_t seq = 0;
  Trace() {
    table->state = ObserverState::kOn;
    table->device_sms = 132;
    table->rank_sms = 32;
  }
  // A launch of `name` in case 3 at time `t_s`.
  LaunchRecord& add(const char* name, const char* stream, uint32_t ordinal, uint32_t blocks,
                    int blocks_per_sm, LaunchState state, LaunchOrigin origin, int op = 0,
                    int t_s = 1) {
    LaunchRecord& r = table->ring[seq % kLaunchRing];
    r = LaunchRecord{};
    r.seq = ++seq;
    r.case_index = 3;
    r.op_idx = op;
    r.slot = static_cast<int>(ordinal);
    r.dcp_size = 2;
    r.stream_ordinal = ordinal;
    r.origin = origin;
    r.state = state;
    r.grid[0] = blocks;
    r.grid[1] = r.grid[2] = 1;
    r.block[0] = 128;
    r.block[1] = r.block[2] = 1;
    r.blocks_per_sm = blocks_per_sm;
    r.usable_sms = 32;
    r.launched_ns = t_s * kSecond;
    std::strncpy(r.name, name, sizeof r.name - 1);
    std::strncpy(r.stream_label, stream, sizeof r.stream_label - 1);
    return r;
  }
};

// The upstream shape on one shared GPU: slot 1's combine (one spinning block
// per token x head) fills the rank's SMs; slot 0's dispatch, which the peer
// waits for, is incomplete on the other stream.
void upstream_hang(Trace& r0, Trace& r1) {
  r0.add("call_prep_kernel", "dcp2 slot 0", 0, 4, 8, LaunchState::kCompleted, LaunchOrigin::kHarness);
  r0.add("dispatch_kernel", "dcp2 slot 0", 0, 128, 16, LaunchState::kLaunched, LaunchOrigin::kKernel);
  r0.add("combine_kernel<true>", "dcp2 slot 1", 1, 2048, 16, LaunchState::kLaunched,
         LaunchOrigin::kKernel, 1);
  r1.add("dispatch_kernel", "dcp2 slot 0", 0, 128, 16, LaunchState::kCompleted, LaunchOrigin::kKernel);
  r1.add("combine_kernel<true>", "dcp2 slot 0", 0, 2048, 16, LaunchState::kLaunched,
         LaunchOrigin::kKernel);
}

TEST_CASE("a grid larger than its residency beside another stream's incomplete kernel is a "
          "forward-progress verdict") {
  Trace r0, r1;
  upstream_hang(r0, r1);
  const LaunchDiagnosis d =
      diagnose_launches({{0, r0.table.get(), true}, {1, r1.table.get(), true}}, 3, 10 * kSecond);
  CHECK(d.not_observed.empty());
  REQUIRE(d.verdict.rfind("forward-progress: ", 0) == 0);
  CHECK(d.verdict.find("rank 0's combine_kernel<true> on dcp2 slot 1 has 2048 blocks") !=
        std::string::npos);
  CHECK(d.verdict.find("at most 512 can be resident") != std::string::npos);
  CHECK(d.verdict.find("while dispatch_kernel on rank 0's dcp2 slot 0; combine_kernel<true> on "
                      "rank 1's dcp2 slot 0 have not completed") != std::string::npos);
  // Per stream, in launch order, the first incomplete one named with its age.
  REQUIRE(d.streams.size() == 3);
  CHECK(d.streams[0].find("rank 0 dcp2 slot 0: op 0: call_prep_kernel") != std::string::npos);
  CHECK(d.streams[0].find("dispatch_kernel [128 blocks x 128 threads, at most 512 resident on 32 "
                          "SMs] first INCOMPLETE for 9.0 s") != std::string::npos);
  CHECK(d.summary.find("rank 0: dispatch_kernel (dcp2 slot 0) incomplete for 9.0 s") !=
        std::string::npos);
  CHECK(d.summary.find("rank 1: combine_kernel<true> (dcp2 slot 0)") != std::string::npos);
}

TEST_CASE("no verdict when every incomplete grid fits, or nothing else is incomplete") {
  Trace r0, r1;
  r0.add("combine", "dcp2 slot 0", 0, 256, 16, LaunchState::kLaunched, LaunchOrigin::kKernel);
  r1.add("combine", "dcp2 slot 0", 0, 256, 16, LaunchState::kLaunched, LaunchOrigin::kKernel);
  CHECK(diagnose_launches({{0, r0.table.get(), true}, {1, r1.table.get(), true}}, 3, 5 * kSecond)
            .verdict.empty());
  Trace lone;
  lone.add("combine", "dcp2 slot 0", 0, 4096, 16, LaunchState::kLaunched, LaunchOrigin::kKernel);
  CHECK(diagnose_launches({{0, lone.table.get(), true}}, 3, 5 * kSecond).verdict.empty());
  // Unknown residency (no occupancy for the function): never a verdict.
  Trace unknown, peer;
  unknown.add("combine", "dcp2 slot 1", 1, 4096, -1, LaunchState::kLaunched, LaunchOrigin::kKernel);
  peer.add("dispatch", "dcp2 slot 0", 0, 64, 16, LaunchState::kLaunched, LaunchOrigin::kKernel);
  CHECK(diagnose_launches({{0, unknown.table.get(), true}, {1, peer.table.get(), true}}, 3,
                          5 * kSecond)
            .verdict.empty());
}

TEST_CASE("a peer's incomplete kernel counts when the rank has no other stream") {
  Trace r0, r1;
  r0.add("combine", "dcp2 slot 0", 0, 4096, 16, LaunchState::kLaunched, LaunchOrigin::kKernel);
  r1.add("dispatch", "dcp2 slot 1", 1, 64, 16, LaunchState::kLaunched, LaunchOrigin::kKernel);
  const LaunchDiagnosis d =
      diagnose_launches({{0, r0.table.get(), true}, {1, r1.table.get(), false}}, 3, 5 * kSecond);
  CHECK(d.verdict.find("while dispatch on rank 1's dcp2 slot 1 has not completed") !=
        std::string::npos);
  CHECK(d.streams.back().find("rank 1 did not answer the snapshot request") != std::string::npos);
}

// Seen on the GPU (SM pressure under MPS): a large grid queued behind a
// stalled harness kernel holds no SM, so it is not the verdict's kernel; the
// peer's spinning combine is, and the queued dispatch is named with what it
// waits behind.
TEST_CASE("the verdict's kernel heads its stream; queued kernels are named with what they follow") {
  Trace r0, r1;
  r0.add("delay_kernel", "dcp2 slot 0", 0, 1, 32, LaunchState::kLaunched, LaunchOrigin::kHarness);
  r0.add("dispatch_kernel", "dcp2 slot 0", 0, 128, 8, LaunchState::kLaunched,
         LaunchOrigin::kKernel);
  r0.add("combine_kernel<true>", "dcp2 slot 0", 0, 1024, 3, LaunchState::kLaunched,
         LaunchOrigin::kKernel);
  r1.add("combine_kernel<true>", "dcp2 slot 0", 0, 1024, 3, LaunchState::kLaunched,
         LaunchOrigin::kKernel);
  const LaunchDiagnosis d =
      diagnose_launches({{0, r0.table.get(), true}, {1, r1.table.get(), true}}, 3, 10 * kSecond);
  CHECK(d.verdict.find("rank 1's combine_kernel<true> on dcp2 slot 0 has 1024 blocks, but at "
                       "most 96 can be resident") != std::string::npos);
  CHECK(d.verdict.find("while dispatch_kernel on rank 0's dcp2 slot 0 (queued behind "
                       "delay_kernel) has not completed") != std::string::npos);
}

TEST_CASE("launches of other cases are left out, and a stream that finished is counted") {
  Trace r0;
  r0.add("old", "dcp2 slot 0", 0, 4096, 16, LaunchState::kLaunched, LaunchOrigin::kKernel).case_index = 2;
  r0.add("dispatch", "dcp2 slot 0", 0, 64, 16, LaunchState::kCompleted, LaunchOrigin::kKernel);
  r0.add("combine", "dcp2 slot 0", 0, 64, 16, LaunchState::kCompleted, LaunchOrigin::kKernel);
  const LaunchDiagnosis d = diagnose_launches({{0, r0.table.get(), true}}, 3, 5 * kSecond);
  REQUIRE(d.streams.size() == 1);
  CHECK(d.streams[0].find("all 2 launch(es) of the case completed") != std::string::npos);
  CHECK(d.streams[0].find("old") == std::string::npos);
  CHECK(d.summary == "rank 0: every kernel launch completed");
}

TEST_CASE("observation off: the reason, no stream lines") {
  LaunchTable off;
  std::strncpy(off.note, "CUPTI: libcupti.so.13 not found", sizeof off.note - 1);
  const LaunchDiagnosis d = diagnose_launches({{0, &off, true}, {1, nullptr, false}}, 0, 0);
  CHECK(d.not_observed == "CUPTI: libcupti.so.13 not found");
  CHECK(d.streams.empty());
  CHECK(d.verdict.empty());
  CHECK(diagnose_launches({{0, nullptr, false}}, 0, 0).not_observed ==
        "no launch observation on this backend");
}

TEST_CASE("control regions side by side per rank, differences marked, zero rows folded") {
  LaunchTable a, b;
  for (LaunchTable* t : {&a, &b}) {
    t->num_control = 1;
    std::strncpy(t->control[0].name, "flags", 31);
    t->control[0].dcp_size = 2;
    t->control[0].bytes = 32;
    t->control[0].dumped = 32;
  }
  const uint32_t epoch_a[2] = {5, 1}, epoch_b[2] = {4, 1};
  std::memcpy(a.control[0].data + 8, epoch_a, 8);
  std::memcpy(b.control[0].data + 8, epoch_b, 8);
  std::memcpy(a.control[0].data + 24, epoch_a, 4);
  std::memcpy(b.control[0].data + 24, epoch_a, 4);
  const auto lines = control_dump_lines({{0, &a, true}, {1, &b, true}});
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].find("control region 'flags' (dcp2 context 0, 32 bytes): | rank 0 | rank 1") == 0);
  CHECK(lines[1] == "  +0x0008 * | 4294967301 (5, 1) | 4294967300 (4, 1)");
  CHECK(lines[2] == "  +0x0018   | 5 (5, 0) | 5 (5, 0)");
  CHECK(lines[3] == "  (2 all-zero rows equal on every rank)");
  CHECK(control_dump_lines({{0, nullptr, false}}).empty());
}

TEST_CASE("the residency warning applies only to grids larger than what can be resident") {
  Trace t;
  LaunchRecord& big = t.add("void ns::combine_kernel<true>(Params)", "s", 0, 2048, 4,
                            LaunchState::kCompleted, LaunchOrigin::kKernel);
  CHECK(residency_warning(big, 132) ==
        "combine_kernel<true> launches 2048 blocks of 128 threads, but at most 528 can be "
        "resident at once on the 132 SMs a rank may use here: its blocks must not wait on peers, "
        "or progress depends on scheduling");
  CHECK(residency_warning(big, 1000).empty());
  big.blocks_per_sm = -1;
  CHECK(residency_warning(big, 132).empty());
}

TEST_CASE("kernel names lose their parameters, return type and namespaces") {
  CHECK(short_kernel_name("void (anonymous namespace)::combine_kernel<true>(Params)") ==
        "combine_kernel<true>");
  CHECK(short_kernel_name("dcp::direct::dispatch(dcp::A<int, 2>)") == "dispatch");
  CHECK(short_kernel_name("kern") == "kern");
  CHECK(short_kernel_name("f<ns::T<1>>(int)") == "f<ns::T<1>>");
}

}  // namespace
}  // namespace dcp
