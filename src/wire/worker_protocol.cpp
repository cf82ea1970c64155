#include "worker_protocol.h"

#include "errors.h"
#include "results.h"

namespace dcp {

using nlohmann::json;

nlohmann::json make_bench_request(int index, const Case& c, const std::string& kernel,
                                  int ops_per_graph, int repeats, int replays, int warmup) {
  return {{"type", "bench"},
          {"index", index},
          {"id", format_case_id(c)},
          {"kernel", kernel},
          {"ops_per_graph", ops_per_graph},
          {"repeats", repeats},
          {"replays", replays},
          {"warmup", warmup}};
}

std::string_view to_string(FaultSpec::Kind kind) {
  switch (kind) {
    case FaultSpec::Kind::kNone:
      return "none";
    case FaultSpec::Kind::kCrash:
      return "crash";
    case FaultSpec::Kind::kHang:
      return "hang";
    case FaultSpec::Kind::kStall:
      return "stall";
    case FaultSpec::Kind::kCorrupt:
      return "corrupt";
    case FaultSpec::Kind::kCudaError:
      return "cuda_error";
    case FaultSpec::Kind::kOom:
      return "oom";
  }
  return "none";
}

nlohmann::json worker_config_to_json(const WorkerConfig& config) {
  const SessionConfig& s = config.session;
  return {
      {"type", "config"},
      {"run_id", config.run_id},
      {"device", config.device},
      {"dcp_sizes", config.dcp_sizes},
      {"gather_timeout_s", config.gather_timeout_s},
      {"world", s.world},
      {"geometry", geometry_json(s.geometry)},
      {"backend", s.backend == BackendKind::kHost ? "host" : "gpu"},
      {"kernel", s.kernel},
      {"against", s.against ? nlohmann::json(*s.against) : nlohmann::json(nullptr)},
      {"against_exact", s.against_exact},
      {"mutant", s.mutant},
      {"timeout_s", s.timeout_s},
      {"upstream_profile", s.profile.upstream},
      {"check_on_device", s.profile.on_device},
      {"audit_one_in", s.profile.audit_one_in},
      {"fault",
       {{"kind", static_cast<int>(s.fault.kind)},
        {"rank", s.fault.rank},
        {"case_index", s.fault.case_index},
        {"op_idx", s.fault.op_idx}}},
      {"check_determinism", s.check_determinism},
      {"observe_launches", s.observe_launches},
      {"verbosity", s.verbosity},
      {"sanitize_tool", s.sanitize_tool},
      {"dump_dir", s.dump_dir},
  };
}

WorkerConfig worker_config_from_json(const nlohmann::json& j) {
  try {
    WorkerConfig c;
    c.run_id = j.at("run_id").get<std::string>();
    c.device = j.at("device").get<int>();
    c.dcp_sizes = j.at("dcp_sizes").get<std::vector<int>>();
    c.gather_timeout_s = j.at("gather_timeout_s").get<double>();
    SessionConfig& s = c.session;
    s.world = j.at("world").get<int>();
    s.geometry = geometry_from_json(j.at("geometry"));
    s.backend =
        j.at("backend").get<std::string>() == "host" ? BackendKind::kHost : BackendKind::kGpu;
    s.kernel = j.at("kernel").get<KernelInfo>();
    if (!j.at("against").is_null()) s.against = j.at("against").get<KernelInfo>();
    s.against_exact = j.at("against_exact").get<bool>();
    s.mutant = j.at("mutant").get<int>();
    s.timeout_s = j.at("timeout_s").get<double>();
    s.profile.upstream = j.at("upstream_profile").get<bool>();
    s.profile.on_device = j.at("check_on_device").get<bool>();
    s.profile.audit_one_in = j.at("audit_one_in").get<int>();
    const json& f = j.at("fault");
    s.fault.kind = static_cast<FaultSpec::Kind>(f.at("kind").get<int>());
    s.fault.rank = f.at("rank").get<int>();
    s.fault.case_index = f.at("case_index").get<int>();
    s.fault.op_idx = f.at("op_idx").get<int>();
    s.check_determinism = j.at("check_determinism").get<bool>();
    s.observe_launches = j.at("observe_launches").get<bool>();
    s.verbosity = j.at("verbosity").get<int>();
    s.sanitize_tool = j.at("sanitize_tool").get<std::string>();
    s.dump_dir = j.at("dump_dir").get<std::string>();
    return c;
  } catch (const nlohmann::json::exception& e) {
    DCP_THROW(HarnessError, "malformed worker config: {}", e.what());
  }
}

}  // namespace dcp
