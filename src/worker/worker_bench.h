// The worker's side of `dcp-check bench`: one bench point (a token count and an
// impl) on this rank. The supervisor sends
//   {"type":"bench","index":k,"id":<case id>,"impl":"direct|stock",
//    "ops_per_graph":K,"repeats":M,"replays":R,"warmup":W}
// and the rank answers with the usual result message (the output check of one
// eager call after timing) plus "bench":{"us":[per-op microseconds per repeat]}.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <utility>

#include "backend.h"
#include "case_runner.h"
#include "rendezvous.h"
#include "worker_protocol.h"

namespace dcp {

struct WorkerBenchHooks {
  int rank = 0;
  Rendezvous* rendezvous = nullptr;
  CaseRunContext context;  // profile, fault, progress (backend_config is filled here)
  // The backend serving (case, kernel spec), built on first use.
  std::function<std::pair<const BackendConfig*, RankBackend*>(const Case&, const std::string&)>
      backend_for;
};

// Runs the request; never throws for kernel or harness faults (they become the
// result's error). Returns the reply message.
nlohmann::json run_bench_request(const nlohmann::json& request, WorkerBenchHooks& hooks);

}  // namespace dcp
