// GroupInit: no rank waits alone, and every rank stops with the root cause.
#include "plugin_services.h"

#include <doctest/doctest.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "errors.h"

namespace dcp {
namespace {

// An in-process rendezvous: one allgather round per key, over threads.
class ThreadRendezvous final : public Rendezvous {
 public:
  explicit ThreadRendezvous(int n) : n_(n) {}
  std::vector<std::string> allgather(const std::string& key, const std::vector<int>& members,
                                     const std::string& mine) override {
    std::unique_lock<std::mutex> lock(mu_);
    Round& r = rounds_[key];
    r.data.resize(n_);
    r.data[rank_of_thread()] = mine;
    if (++r.arrived == n_) cv_.notify_all();
    const bool done = cv_.wait_for(lock, std::chrono::seconds(10), [&] { return r.arrived == n_; });
    if (!done) throw HarnessError("rendezvous " + key + " timed out: a rank waits alone");
    (void)members;
    return r.data;
  }
  static int& rank_of_thread() {
    thread_local int rank = 0;
    return rank;
  }

 private:
  struct Round {
    int arrived = 0;
    std::vector<std::string> data;
  };
  int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Round> rounds_;
};

struct Outcome {
  bool ok = false;
  std::string message;
  bool usage = false;
};

// Runs `init(rank, services)` on n threads, then the agreement, as the worker
// does; rank `injected`'s failure is dcp-check's (an init-fault case).
std::vector<Outcome> run_group(
    int n, const std::function<dcpStatus_t(int, const dcpHostServices_v1*, std::string*)>& init,
    int injected = -1) {
  ThreadRendezvous rdv(n);
  std::vector<int> members;
  for (int i = 0; i < n; ++i) members.push_back(10 + i);
  std::vector<Outcome> out(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ThreadRendezvous::rank_of_thread() = r;
      GroupInit g(rdv, "k", members, r, nullptr);
      std::string msg;
      const dcpStatus_t st = init(r, g.services(), &msg);
      try {
        g.agree(st, msg, r == injected);
        out[r].ok = true;
      } catch (const UsageError& e) {
        out[r].usage = true;
        out[r].message = e.what();
      } catch (const std::exception& e) {
        out[r].message = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

TEST_CASE("an injected init failure is the cause, not a lower rank's own failure waiting for it") {
  // Rank 0 waits for its peers outside the services with a bound, gives up
  // and fails on its own ('R'); rank 2's failure is injected: rank 2 is named.
  const auto out = run_group(
      3,
      [](int r, const dcpHostServices_v1*, std::string* msg) {
        if (r == 1) return DCP_STATUS_OK;
        *msg = r == 0 ? "timed out waiting for the peers" : "injected on rank 2";
        return DCP_STATUS_INTERNAL;
      },
      /*injected=*/2);
  for (const Outcome& o : out) {
    CHECK_FALSE(o.ok);
    CHECK_MESSAGE(o.message.find("rank 12 (group rank 2): injected on rank 2") != std::string::npos,
                  o.message);
  }
  // Without the injection mark the lowest root failure is named, as before.
  const auto plain = run_group(3, [](int r, const dcpHostServices_v1*, std::string* msg) {
    if (r == 1) return DCP_STATUS_OK;
    *msg = r == 0 ? "timed out waiting for the peers" : "injected on rank 2";
    return DCP_STATUS_INTERNAL;
  });
  for (const Outcome& o : plain) {
    CHECK(o.message.find("rank 10 (group rank 0): timed out") != std::string::npos);
  }
}

TEST_CASE("init services: allgather and barrier over the group, then every rank proceeds") {
  const auto out = run_group(4, [](int r, const dcpHostServices_v1* s, std::string*) {
    int32_t mine = 100 + r;
    int32_t all[4] = {};
    if (s->allgather(s->handle, &mine, sizeof mine, all) != DCP_STATUS_OK)
      return DCP_STATUS_INTERNAL;
    for (int i = 0; i < 4; ++i) {
      if (all[i] != 100 + i) return DCP_STATUS_INTERNAL;
    }
    return s->barrier(s->handle);
  });
  for (const Outcome& o : out) CHECK_MESSAGE(o.ok, o.message);
}

TEST_CASE("init failing on one rank before an allgather: every rank stops with its message") {
  const auto out = run_group(3, [](int r, const dcpHostServices_v1* s, std::string* msg) {
    if (r == 1) {
      *msg = "injected on rank 1";
      return DCP_STATUS_INTERNAL;  // never joins the allgather its peers wait in
    }
    int64_t v = r;
    int64_t all[3];
    const dcpStatus_t st = s->allgather(s->handle, &v, sizeof v, all);
    if (st != DCP_STATUS_OK) *msg = "allgather failed";
    return st;
  });
  for (const Outcome& o : out) {
    CHECK_FALSE(o.ok);
    CHECK(o.message.find("rank 11 (group rank 1): injected on rank 1") != std::string::npos);
    CHECK_FALSE(o.usage);
  }
}

TEST_CASE("init: UNSUPPORTED is a usage error and ranks that disagree on sizes fail together") {
  auto unsupported = run_group(2, [](int r, const dcpHostServices_v1*, std::string* msg) {
    *msg = "no such geometry";
    return r == 0 ? DCP_STATUS_UNSUPPORTED : DCP_STATUS_OK;
  });
  for (const Outcome& o : unsupported) CHECK(o.usage);
  auto sizes = run_group(2, [](int r, const dcpHostServices_v1* s, std::string* msg) {
    char buf[16] = {}, all[32] = {};
    const dcpStatus_t st = s->allgather(s->handle, buf, r == 0 ? 4 : 8, all);
    if (st != DCP_STATUS_OK) *msg = "sizes";
    return st;
  });
  for (const Outcome& o : sizes) CHECK_FALSE(o.ok);
}

TEST_CASE("ServicesRendezvous carries variable-length contributions over fixed-size services") {
  ThreadRendezvous rdv(3);
  std::vector<std::vector<std::string>> got(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      ThreadRendezvous::rank_of_thread() = r;
      GroupInit g(rdv, "v", {0, 1, 2}, r, nullptr);
      ServicesRendezvous sr(*g.services(), 3);
      got[r] = sr.allgather("x", {0, 1, 2}, std::string(r * 3, 'a' + r));
      g.agree(DCP_STATUS_OK, "");
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) {
    REQUIRE(got[r].size() == 3);
    CHECK(got[r][0].empty());
    CHECK(got[r][1] == "bbb");
    CHECK(got[r][2] == "cccccc");
  }
}

}  // namespace
}  // namespace dcp
