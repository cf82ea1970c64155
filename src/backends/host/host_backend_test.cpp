// The host model of the protocol, run by W threads (one backend each, like W
// worker processes): many calls with skew pass the real checker, and the
// protocol mutants are caught, which proves the model and the checker can fail.
#include "host_backend.h"

#include <dirent.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "case_runner.h"
#include "errors.h"
#include "geometry.h"
#include "host_mutants.h"
#include "plan.h"
#include "status_board.h"

namespace dcp {
namespace {

// In-process rendezvous: every thread of a group posts, then waits for all.
class Hub {
 public:
  std::vector<std::string> allgather(const std::string& key, const std::vector<int>& members,
                                     int rank, const std::string& mine) {
    std::unique_lock<std::mutex> lock(mu_);
    Round& round = rounds_[key];
    round.data[rank] = mine;
    cv_.notify_all();
    const bool done = cv_.wait_for(lock, std::chrono::seconds(60),
                                   [&] { return rounds_[key].data.size() == members.size(); });
    if (!done) throw HarnessError("test rendezvous timed out: " + key);
    Round& r = rounds_[key];
    std::vector<std::string> out;
    for (int m : members) out.push_back(r.data.at(m));
    if (++r.readers == static_cast<int>(members.size())) rounds_.erase(key);
    return out;
  }

 private:
  struct Round {
    std::map<int, std::string> data;
    int readers = 0;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Round> rounds_;
};

class ThreadRendezvous final : public Rendezvous {
 public:
  ThreadRendezvous(Hub& hub, int rank) : hub_(hub), rank_(rank) {}
  std::vector<std::string> allgather(const std::string& key, const std::vector<int>& members,
                                     const std::string& mine) override {
    return hub_.allgather(key, members, rank_, mine);
  }

 private:
  Hub& hub_;
  int rank_;
};

std::string unique_run_id() {
  static std::atomic<int> counter{0};
  return "hosttest" + std::to_string(getpid()) + "x" + std::to_string(counter++);
}

int count_shm_with_prefix(const std::string& run_id) {
  const std::string prefix = "dcp-check-" + run_id + "-";
  int n = 0;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* e = readdir(dir))
      n += std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
    closedir(dir);
  }
  return n;
}

// Runs `cases` on one DCP group of `w` threads; results[case][rank]. A case
// that errors on any rank ends the run after that case (as a session would).
std::vector<std::vector<RankCaseResult>> run_group(int w, const std::vector<Case>& cases,
                                                   int mutant, double spin_timeout_s,
                                                   WaitStatus* statuses = nullptr) {
  Hub hub;
  const std::string run_id = unique_run_id();
  const Geometry geometry = cases.front().geometry;
  std::vector<std::vector<RankCaseResult>> results(cases.size(), std::vector<RankCaseResult>(w));
  std::atomic<bool> stop{false};
  std::atomic<int> built{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < w; ++r) {
    threads.emplace_back([&, r] {
      BackendConfig bc;
      bc.global_rank = r;
      bc.group_rank = r;
      bc.dcp_size = w;
      for (int i = 0; i < w; ++i) bc.members.push_back(i);
      bc.geometry = geometry;
      bc.mutant = mutant;
      bc.spin_timeout_s = spin_timeout_s;
      bc.status = statuses != nullptr ? &statuses[r] : nullptr;
      bc.run_id = run_id;
      ThreadRendezvous rdv(hub, r);
      auto backend = make_host_backend(bc, rdv);
      ++built;
      for (size_t k = 0; k < cases.size() && !stop; ++k) {
        const std::string key = std::to_string(k);
        rdv.barrier("begin" + key, bc.members);
        backend->begin_case(cases[k]);
        rdv.barrier("go" + key, bc.members);
        CaseRunContext ctx;
        ctx.backend_config = &bc;
        ctx.case_index = static_cast<int>(k);
        results[k][r] = run_case_on_rank(cases[k], *backend, ctx);
        if (!results[k][r].error.empty()) stop = true;
        rdv.barrier("end" + key, bc.members);
      }
    });
  }
  for (auto& t : threads) t.join();
  // Every rank unlinked its segment name once the whole group had mapped it.
  CHECK(count_shm_with_prefix(run_id) == 0);
  CHECK(built == w);
  return results;
}

Case base_case(int w) {
  Case c;
  c.dcp_size = w;
  c.geometry = *find_geometry("tiny");
  c.seed = 0x5eed;
  return c;
}

std::vector<Case> protocol_cases(int w) {
  std::vector<Case> cases;
  Case a = base_case(w);  // many skewed eager calls alternating two slots
  a.out_dtype = DType::kFp16;
  a.lse_dtype = DType::kBf16;
  a.lse_base = LseBase::kE;
  a.num_tokens = 17;
  a.empty = EmptyPattern::kRandom;
  a.num_slots = 2;
  a.num_calls = 40;
  a.skew = true;
  cases.push_back(a);
  Case b = base_case(w);  // pipelined, padded strides, NaN LSEs, layers
  b.num_tokens = b.geometry.max_tokens;
  b.out_pad_elems = 8;
  b.lse_pad_elems = 3;
  b.special = SpecialLse::kNan;
  b.mode = ExecMode::kPipelined;
  b.num_calls = 8;
  b.num_layers = 2;
  b.skew = true;
  b.seed = 0xb0b;
  cases.push_back(b);
  Case g = base_case(w);  // graph replays across the 32-bit epoch wrap
  g.num_tokens = 5;
  g.mode = ExecMode::kGraph;
  g.num_calls = 10;
  g.num_slots = 2;
  g.empty = EmptyPattern::kAll;
  g.epoch_start = 0xFFFFFFF8u;
  g.skew = true;
  g.seed = 0x9a9;
  cases.push_back(g);
  Case e = base_case(w);  // single-token calls back to back, fp16 LSE
  e.lse_dtype = DType::kFp16;
  e.num_calls = 100;
  e.skew = true;
  e.seed = 0xe;
  cases.push_back(e);
  return cases;
}

void require_all_passed(const std::vector<std::vector<RankCaseResult>>& results) {
  for (const auto& per_case : results) {
    for (const auto& r : per_case) {
      INFO(r.case_id, " rank ", r.rank, ": ", r.error);
      CHECK(r.error.empty());
      CHECK(r.passed);
      CHECK(r.num_checked > 0);
    }
  }
}

TEST_CASE("the host model passes the checker with 2 and 4 ranks, skew, pipelining, wrap") {
  for (int w : {2, 4}) {
    CAPTURE(w);
    require_all_passed(run_group(w, protocol_cases(w), kHostMutantNone, 10.0));
  }
}

TEST_CASE("the host model is deterministic: the same case gives the same output bits") {
  std::vector<Case> twice = {protocol_cases(2)[0], protocol_cases(2)[0]};
  auto results = run_group(2, twice, kHostMutantNone, 10.0);
  for (int r = 0; r < 2; ++r) CHECK(results[0][r].output_hash == results[1][r].output_hash);
}

// The protocol mutants force the interleaving that exposes them (step words in
// the host model, see HostBackend::run_call), so each is caught on every run by
// a mismatch (never a hang, never by luck of timing), and with two ranks the
// wrong outputs are the same bits every time.
TEST_CASE("every protocol mutant is caught on every run, by construction") {
  for (int mutant : {int{kHostMutantSingleParity}, int{kHostMutantEarlySignal},
                     int{kHostMutantStaleWait}}) {
    for (int w : {2, 4}) {
      CAPTURE(mutant);
      CAPTURE(w);
      // Back-to-back skewed calls on one slot: consecutive same-slot calls
      // (single-parity) and each parity half reused (stale-wait).
      Case c = base_case(w);
      c.num_tokens = c.geometry.max_tokens;
      c.num_calls = 6;
      c.skew = true;
      require_all_passed(run_group(w, {c}, kHostMutantNone, 10.0));  // the case is fine...
      std::vector<uint64_t> hashes;
      for (int run = 0; run < 3; ++run) {
        auto results = run_group(w, {c}, mutant, 10.0);  // ...the model is not, every time
        const RankCaseResult& r0 = results[0][0];
        INFO("run ", run, ": ", r0.error);
        CHECK(r0.error.empty());
        CHECK_FALSE(r0.passed);
        CHECK(r0.failure == FailureKind::kMismatch);
        CHECK(r0.num_mismatches > 0);
        hashes.push_back(r0.output_hash);
      }
      if (w == 2) {
        CHECK(hashes[1] == hashes[0]);
        CHECK(hashes[2] == hashes[0]);
      }
    }
  }
}

// Only the epoch's 2^31 crossing separates an ordered int32 compare from the
// correct equality: the same case passes fresh and across 2^32.
TEST_CASE("the signed-epoch-order mutant is caught across 2^31, every run, and only there") {
  for (int w : {2, 4}) {
    CAPTURE(w);
    Case c = base_case(w);
    c.num_tokens = 7;
    c.num_calls = 6;
    c.skew = true;
    for (std::optional<uint32_t> start : {std::optional<uint32_t>{}, std::optional(0xFFFFFFFDu)}) {
      c.epoch_start = start;
      require_all_passed(run_group(w, {c}, kHostMutantSignedEpochOrder, 10.0));
    }
    c.epoch_start = 0x7FFFFFFDu;
    require_all_passed(run_group(w, {c}, kHostMutantNone, 10.0));
    for (int run = 0; run < 3; ++run) {
      const RankCaseResult r0 = run_group(w, {c}, kHostMutantSignedEpochOrder, 10.0)[0][0];
      INFO("run ", run, ": ", r0.error);
      CHECK(r0.error.empty());
      CHECK(r0.failure == FailureKind::kMismatch);
      CHECK(r0.num_mismatches > 0);
    }
  }
}

Case graph_set_case(int w, int slots) {
  Case c = base_case(w);
  c.num_tokens = c.geometry.max_tokens;
  c.mode = ExecMode::kGraphSet;
  c.num_calls = 8;
  c.num_slots = slots;
  c.seed = 0x65e7 + static_cast<uint64_t>(slots);
  return c;
}

// Elements one rank checks in a case: each call's T (a graph set's vary).
int64_t checked_elements(const Case& c) {
  int64_t n = 0;
  for (const PlannedBatch& b : plan_case(c, 0)) {
    n += static_cast<int64_t>(b.calls.size()) * batch_case(c, b).num_tokens *
         c.geometry.heads_per_rank * c.geometry.head_dim;
  }
  return n;
}

TEST_CASE("a graph set runs on the host model end to end, every call checked, bit for bit again") {
  for (int w : {2, 4}) {
    for (int slots : {1, 2}) {
      CAPTURE(w);
      CAPTURE(slots);
      const Case c = graph_set_case(w, slots);
      auto results = run_group(w, {c, c}, kHostMutantNone, 10.0);
      require_all_passed(results);
      for (int r = 0; r < w; ++r) {
        CHECK(results[0][r].num_checked >= checked_elements(c));
        CHECK(results[0][r].output_hash == results[1][r].output_hash);
      }
    }
  }
}

// The mutant packs receive rows by the T of the slot's last call(): eager,
// pipelined and one-graph-per-slot calls all pass it the T they run with, so
// only a graph set's replay after a capture of fewer tokens breaks it.
TEST_CASE("the host-mapped-params mutant is caught by a graph set, and only there") {
  for (int w : {2, 4}) {
    for (int slots : {1, 2}) {
      CAPTURE(w);
      CAPTURE(slots);
      Case c = graph_set_case(w, slots);
      for (ExecMode m : {ExecMode::kEager, ExecMode::kGraph, ExecMode::kPipelined,
                         ExecMode::kMixed}) {
        CAPTURE(m);
        Case other = c;
        other.mode = m;
        require_all_passed(run_group(w, {other}, kHostMutantHostMappedParams, 10.0));
      }
      for (int run = 0; run < 2; ++run) {
        const RankCaseResult r0 = run_group(w, {c}, kHostMutantHostMappedParams, 10.0)[0][0];
        INFO("run ", run, ": ", r0.error);
        CHECK(r0.error.empty());
        CHECK(r0.failure == FailureKind::kMismatch);
        CHECK(r0.num_mismatches > 0);
      }
    }
  }
}

// Two kernel contexts per rank, the ops alternating between them: eager, pipelined
// with layers, graphs on two slots, across the epoch wrap.
std::vector<Case> two_context_cases(int w) {
  std::vector<Case> cases;
  Case a = base_case(w);
  a.num_contexts = 2;
  a.num_tokens = 5;
  a.num_calls = 6;
  a.skew = true;
  cases.push_back(a);
  Case b = a;
  b.mode = ExecMode::kPipelined;
  b.num_slots = 2;
  b.num_layers = 2;
  b.empty = EmptyPattern::kOne;
  b.seed = 0xc2;
  cases.push_back(b);
  Case g = a;
  g.mode = ExecMode::kGraph;
  g.num_slots = 2;
  g.epoch_start = 0xFFFFFFFEu;
  g.seed = 0xc3;
  cases.push_back(g);
  return cases;
}

TEST_CASE("two contexts per rank: every call checked, the second context made once, lazily") {
  for (int w : {2, 4}) {
    CAPTURE(w);
    std::vector<Case> cases = {base_case(w)};  // one context first, then two, then one again
    for (const Case& c : two_context_cases(w)) cases.push_back(c);
    cases.push_back(base_case(w));
    const auto results = run_group(w, cases, kHostMutantNone, 10.0);
    require_all_passed(results);
    for (size_t k = 0; k < cases.size(); ++k) {
      CHECK(results[k][0].num_checked >= checked_elements(cases[k]));
    }
  }
}

// The twin of the GPU mutant: this rank's own receive buffers are context 0's
// whatever the call's context. One context per case (even after a second one
// exists) is the correct model; every two-context case combines stale payloads.
TEST_CASE("the global-recv-buffers mutant is caught by the two-contexts cases, and only there") {
  for (int w : {2, 4}) {
    CAPTURE(w);
    std::vector<Case> one = protocol_cases(w);
    for (Case c : two_context_cases(w)) one.push_back((c.num_contexts = 1, c));
    require_all_passed(run_group(w, one, kHostMutantGlobalRecvBuffers, 10.0));
    for (const Case& c : two_context_cases(w)) {
      CAPTURE(format_case_id(c));
      const auto results = run_group(w, {base_case(w), c, base_case(w)},
                                     kHostMutantGlobalRecvBuffers, 10.0);
      for (int r = 0; r < w; ++r) {
        INFO("rank ", r, ": ", results[1][r].error);
        CHECK(results[0][r].passed);
        CHECK(results[1][r].error.empty());
        CHECK(results[1][r].failure == FailureKind::kMismatch);
        CHECK(results[1][r].num_mismatches > 0);
        CHECK(results[2][r].passed);  // context 0 alone is right again
      }
    }
  }
}

TEST_CASE("a capacity case passes only when every rank refuses it") {
  for (int w : {2, 4}) {
    CAPTURE(w);
    Case c = base_case(w);
    c.num_tokens = c.geometry.max_tokens + 1;
    c.num_calls = 2;
    const auto refused = run_group(w, {c}, kHostMutantNone, 10.0);
    for (const RankCaseResult& r : refused[0]) {
      INFO(r.error);
      CHECK(r.passed);
      CHECK(r.error.empty());
      CHECK(r.note.find("refused: host model: T=") == 0);
      CHECK(r.num_checked == 0);
    }
    const auto accepted = run_group(w, {c}, kHostMutantNoCapacityCheck, 10.0);
    for (const RankCaseResult& r : accepted[0]) {
      CHECK_FALSE(r.passed);
      CHECK(r.failure == FailureKind::kOverCapacity);
      CHECK(r.error.find("accepted a call of T=") != std::string::npos);
    }
    c.num_tokens = c.geometry.max_tokens;  // at capacity: runs and is checked
    require_all_passed(run_group(w, {c}, kHostMutantNoCapacityCheck, 10.0));
  }
}

// The combined LSE follows the output and is checked against float64: all-empty
// rows (emptyall) must be exactly -inf, and a base-2 LSE for base-e inputs is
// caught there although every output element is right.
TEST_CASE("the combined LSE is checked, -inf rows included, and its mutant is caught only there") {
  Case c = base_case(2);
  c.lse_base = LseBase::kE;
  c.empty = EmptyPattern::kAll;
  c.num_tokens = 9;
  c.num_calls = 2;
  require_all_passed(run_group(2, {c}, kHostMutantNone, 10.0));
  const auto results = run_group(2, {c}, kHostMutantCombinedLseBase2, 10.0);
  for (const RankCaseResult& r : results[0]) {
    CHECK_FALSE(r.passed);
    CHECK(r.failure == FailureKind::kMismatch);
    REQUIRE_FALSE(r.first_mismatches.empty());
    CHECK(r.first_mismatches.front().dim == -1);  // the combined LSE, not an output element
  }
  const int64_t lse_rows = int64_t{c.num_calls} * c.num_tokens * c.geometry.heads_per_rank;
  const int64_t out_elems = lse_rows * c.geometry.head_dim;
  CHECK(results[0][0].num_checked == out_elems + lse_rows);
  CHECK(results[0][0].num_mismatches <= lse_rows);  // the outputs are all right
  c.lse_base = LseBase::k2;  // base 2: the mutant changes nothing
  require_all_passed(run_group(2, {c}, kHostMutantCombinedLseBase2, 10.0));
}

TEST_CASE("the no-base-conversion mutant fails every base-e case") {
  Case c = base_case(2);
  c.lse_base = LseBase::kE;
  c.num_tokens = 9;
  c.num_calls = 3;
  require_all_passed(run_group(2, {c}, kHostMutantNone, 10.0));
  auto results = run_group(2, {c}, kHostMutantNoBaseConversion, 10.0);
  for (const auto& r : results[0]) {
    CHECK(r.error.empty());
    CHECK_FALSE(r.passed);
    CHECK(r.num_mismatches > 0);
  }
}

TEST_CASE("a wait that never ends traps with who waits on whom, and the status board says so") {
  // Rank 1 builds its workspace but never calls: rank 0's bounded spin expires.
  Hub hub;
  const std::string run_id = unique_run_id();
  WaitStatus statuses[2] = {};
  Case c = base_case(2);
  std::string error;
  double waited_s = 0;
  std::vector<std::unique_ptr<RankBackend>> backends(2);
  std::vector<BackendConfig> configs(2);
  std::vector<std::thread> builders;
  for (int r = 0; r < 2; ++r) {
    configs[r].global_rank = r;
    configs[r].group_rank = r;
    configs[r].dcp_size = 2;
    configs[r].members = {0, 1};
    configs[r].geometry = c.geometry;
    configs[r].spin_timeout_s = 0.5;
    configs[r].status = &statuses[r];
    configs[r].run_id = run_id;
    builders.emplace_back([&, r] {
      ThreadRendezvous rdv(hub, r);
      backends[r] = make_host_backend(configs[r], rdv);
    });
  }
  for (auto& t : builders) t.join();
  CaseRunContext ctx;
  ctx.backend_config = &configs[0];
  const auto start = std::chrono::steady_clock::now();
  RankCaseResult r = run_case_on_rank(c, *backends[0], ctx);
  waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.failure == FailureKind::kHang);
  CHECK(r.error.find("rank 0 waits for rank 1 (slot 0, parity 1, epoch 1; flag holds 0)") !=
        std::string::npos);
  CHECK(waited_s >= 0.5);
  CHECK(waited_s < 5.0);
  CHECK(statuses[0].waiting == 1);
  CHECK(statuses[0].trapped == 1);
  CHECK(statuses[0].last_signalled_epoch[0] == 1);
  CHECK(statuses[1].last_signalled_epoch[0] == 0);
  auto lines = diagnose_waits({&statuses[0], &statuses[1]}, 2);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("rank 0 waits for rank 1") == 0);
  CHECK(lines[0].find("rank 1 last signalled epoch 0") != std::string::npos);
}

TEST_CASE("segment names are deterministic and cover every group of a world") {
  auto names = host_segment_names("rid", 4);
  // dcp4: 1 group of 4 ranks; dcp2: 2 groups of 2; each name also with the host plugin
  // suffix, and all of them again for a second kernel context.
  REQUIRE(names.size() == 32);
  CHECK(std::find(names.begin(), names.end(), "/dcp-check-rid-g2x1-r3-c1") != names.end());
  CHECK(std::find(names.begin(), names.end(), "/dcp-check-rid-g2x1-r3-p-c1") != names.end());
  CHECK(std::find(names.begin(), names.end(), "/dcp-check-rid-g2x1-r3-p") != names.end());
  CHECK(std::find(names.begin(), names.end(), "/dcp-check-rid-g4x0-r3") != names.end());
  CHECK(std::find(names.begin(), names.end(), "/dcp-check-rid-g2x1-r3") != names.end());
  CHECK(host_segment_name("rid", 2, 1, 2) == "/dcp-check-rid-g2x1-r2");
}

}  // namespace
}  // namespace dcp
