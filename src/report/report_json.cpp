#include "report_json.h"

#include "errors.h"
#include "report_file.h"
#include "version_info.h"

namespace dcp {
namespace {

std::string backend_name(BackendKind b) { return b == BackendKind::kHost ? "host" : "gpu"; }
std::string mps_name(MpsMode m) {
  return m == MpsMode::kOn ? "on" : (m == MpsMode::kOff ? "off" : "auto");
}
std::string fault_kind_name(FaultSpec::Kind k) {
  switch (k) {
    case FaultSpec::Kind::kNone: return "none";
    case FaultSpec::Kind::kCrash: return "crash";
    case FaultSpec::Kind::kHang: return "hang";
    case FaultSpec::Kind::kStall: return "stall";
    case FaultSpec::Kind::kCorrupt: return "corrupt";
    case FaultSpec::Kind::kCudaError: return "cuda-error";
    case FaultSpec::Kind::kOom: return "oom";
  }
  return "?";
}

// A plain json value (results.h's to_json) with its keys in writing order.
nlohmann::ordered_json ordered(const nlohmann::json& j) {
  return nlohmann::ordered_json::parse(j.dump());
}

std::string hex64(uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string join_argv(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) {
    const bool plain = !a.empty() && a.find_first_of(" \t\"'\\$`*?()[]{}|;&<>") == std::string::npos;
    line += (line.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return line;
}

}  // namespace

nlohmann::ordered_json environment_to_json(const EnvironmentInfo& env) {
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (const auto& g : env.gpus) {
    gpus.push_back({{"index", g.index}, {"name", g.name}, {"uuid", g.uuid}});
  }
  return {{"backend", env.backend},
          {"mps_mode", env.mps_mode},
          {"gpus", gpus},
          {"rank_gpu", env.rank_gpu},
          {"ranks_share_gpu", env.ranks_share_gpu},
          {"driver_version", env.driver_version},
          {"cuda_runtime_version", env.cuda_runtime_version},
          {"nccl_version", env.nccl_version},
          {"dcp_version", env.dcp_version},
          {"git_revision", env.git_revision},
          {"hostname", env.hostname},
          {"launch_observation", env.launch_observation},
          {"residency_warnings", env.residency_warnings},
          {"memory_stress", env.memory_stress},
          {"startup_s", env.startup_s},
          {"teardown_s", env.teardown_s},
          {"teardown", {{"workers_s", env.teardown.workers_s},
                        {"mps_s", env.teardown.mps_s},
                        {"rest_s", env.teardown.rest_s},
                        {"workers_killed", env.teardown.workers_killed}}}};
}

nlohmann::ordered_json config_to_json(const RunReport& report) {
  const SessionConfig& c = report.config;
  const Geometry& g = c.geometry;
  nlohmann::ordered_json j = {
      {"world", c.world},
      {"geometry",
       {{"name", g.name},
        {"heads_per_rank", g.heads_per_rank},
        {"head_dim", g.head_dim},
        {"max_tokens", g.max_tokens},
        {"storage_heads", g.storage_heads},
        {"source", g.source}}},
      {"suite", report.suite},
      {"filter", report.filter},
      {"seed", report.seed},
      {"backend", backend_name(c.backend)},
      {"kernel", ordered(c.kernel)},
      {"against", c.against ? ordered(*c.against) : nlohmann::ordered_json(nullptr)},
      {"against_exact", c.against_exact},
      {"timeout_s", c.timeout_s},
      {"mps", mps_name(c.mps)},
      {"check_determinism", c.check_determinism},
      {"verbosity", c.verbosity},
      // --sanitize TOOL, or null when the workers ran bare.
      {"sanitize", c.sanitize_tool.empty() ? nlohmann::ordered_json(nullptr)
                                           : nlohmann::ordered_json(c.sanitize_tool)},
  };
  if (c.mutant != 0) j["mutant"] = c.mutant;  // a test-only broken variant ran
  if (c.fault.kind != FaultSpec::Kind::kNone) {
    j["inject_fault"] = {{"kind", fault_kind_name(c.fault.kind)},
                         {"rank", c.fault.rank},
                         {"case_index", c.fault.case_index},
                         {"op_idx", c.fault.op_idx}};
  }
  return j;
}

nlohmann::ordered_json case_to_json(const CaseResult& r) {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const auto& k : r.ranks) {
    nlohmann::ordered_json kj = ordered(k);  // results.h's to_json: the per-rank field names
    kj["output_hash_hex"] = hex64(k.output_hash);
    ranks.push_back(std::move(kj));
  }
  nlohmann::ordered_json j = {{"id", r.case_id},
                              {"suite", r.suite},
                              {"status", std::string(to_string(r.status))},
                              {"failure_type", failure_type(r)},
                              {"message", r.message},
                              {"diagnosis", r.diagnosis},
                              {"replay", r.replay},
                              {"elapsed_ms", r.elapsed_ms},
                              {"wall_ms", r.wall_ms},
                              {"ranks", ranks}};
  // --against: the ranks' agreement summed (each rank's is under ranks[i].agreement).
  if (const std::optional<Agreement> a = case_agreement(r)) j["agreement"] = ordered(*a);
  // --sanitize: compute-sanitizer's findings (absent when it found none).
  if (!r.sanitizer_findings.empty()) {
    nlohmann::json findings = r.sanitizer_findings;
    j["sanitizer_findings"] = ordered(findings);
  }
  return j;
}

nlohmann::ordered_json report_to_json(const RunReport& report) {
  const Counts c = count_results(report.cases);
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (const auto& r : report.cases) cases.push_back(case_to_json(r));
  nlohmann::ordered_json j = {
      {"schema_version", kJsonSchemaVersion},
      {"tool", version_json(version_info())},
      {"command", report.command},
      {"argv", report.argv},
      {"command_line", join_argv(report.argv)},
      {"configuration", config_to_json(report)},
      {"environment", report.environment ? environment_to_json(*report.environment)
                                         : nlohmann::ordered_json(nullptr)},
      {"started_at", report.started_at},
      {"wall_s", report.wall_s},
      {"interrupted_by_signal", report.interrupted_by},
      {"counts",
       {{"total", c.total},
        {"passed", c.passed},
        {"failed", c.failed},
        {"errors", c.errors},
        {"skipped", c.skipped}}},
      {"verdict", verdict_word(report.exit_code)},
      {"exit_code", report.exit_code},
      {"cases", cases},
      {"phases", report.phases.to_json()},
  };
  if (const std::optional<Agreement> a = run_agreement(report.cases)) {
    j["agreement"] = ordered(*a);
    j["agreement"]["line"] = agreement_line(*a, report.config);
  }
  if (report.repeat) {
    j["repeat"] = {{"runs", report.repeat->runs},
                   {"failed_runs", report.repeat->failed_runs},
                   {"hashes_identical", report.repeat->hashes_identical}};
  }
  if (report.coverage) j["coverage"] = nlohmann::json(*report.coverage);
  if (report.shard) {
    j["shard"] = {{"index", report.shard->index},
                  {"count", report.shard->count},
                  {"source", report.shard->source},
                  {"suite_cases", report.shard->suite_cases},
                  {"suite_sha256", report.shard->suite_sha256},
                  {"base_seed", report.shard->base_seed}};
  }
  return j;
}

}  // namespace dcp
