#include "report_merge.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "case.h"
#include "errors.h"
#include "exit_code.h"
#include "kernel_plugin.h"
#include "report_json.h"

namespace dcp {
namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void refuse(const std::string& message) { throw UsageError("merge: " + message); }

CaseStatus status_from(const std::string& s) {
  for (CaseStatus st : {CaseStatus::kPass, CaseStatus::kFail, CaseStatus::kError, CaseStatus::kSkipped}) {
    if (to_string(st) == s) return st;
  }
  throw std::invalid_argument("unknown case status '" + s + "'");
}

struct ShardPos {
  int index = 0;
  int count = 1;
};

ShardPos shard_of(const Json& j) {
  if (!j.contains("shard") || j["shard"].is_null()) return {};
  return {j["shard"].at("index").get<int>(), j["shard"].at("count").get<int>()};
}

// What must be equal for reports to be parts of one run: (label, value).
std::vector<std::pair<std::string, std::string>> identity(const Json& j) {
  const Json& c = j.at("configuration");
  const auto kernel_id = [](const Json& k) {
    if (k.is_null()) return std::string("none");
    const std::string sha = k.value("sha256", std::string());  // "" for a built-in kernel
    return k.value("name", std::string()) + (sha.empty() ? "" : " sha256 " + sha);
  };
  std::vector<std::pair<std::string, std::string>> id = {
      {"command", j.at("command").get<std::string>()},
      {"dcp-check version", j.at("tool").at("version").get<std::string>() + " (" +
                                j.at("tool").at("git_revision").get<std::string>() + ")"},
      {"suite", c.at("suite").get<std::string>()},
      {"filter", "'" + c.at("filter").get<std::string>() + "'"},
      {"world", std::to_string(c.at("world").get<int>())},
      {"geometry", c.at("geometry").dump()},
      {"backend", c.at("backend").get<std::string>()},
      {"kernel", kernel_id(c.at("kernel"))},
      {"against", kernel_id(c.at("against"))},
      {"mutant", std::to_string(c.value("mutant", 0))},
  };
  // run: the suite's seed; stress: the base seed every shard's stream derives from.
  if (j.contains("shard") && !j["shard"].is_null() && j.at("command") == "stress") {
    id.emplace_back("base seed", std::to_string(j["shard"].at("base_seed").get<uint64_t>()));
  } else {
    id.emplace_back("seed", std::to_string(c.at("seed").get<uint64_t>()));
  }
  // run, last (the ids hold every field above): the whole case list each shard
  // split, generated per machine (one with fewer GPUs may generate another).
  if (j.contains("shard") && !j["shard"].is_null() && j.at("command") == "run") {
    id.emplace_back("suite's case list (sha256)", j["shard"].value("suite_sha256", std::string()));
  }
  return id;
}

// Interrupted, then 1, then 3, then 2, then 0 (exit_code.h's precedence).
int worse(int a, int b) {
  const auto rank = [](int code) {
    if (code >= 128) return 4;
    if (code == kExitKernelFailure) return 3;
    if (code == kExitHarness) return 2;
    if (code == kExitUsage) return 1;
    return 0;
  };
  return rank(b) > rank(a) ? b : a;
}

RunReport report_skeleton(const Json& j) {
  RunReport r;
  const Json& c = j.at("configuration");
  r.command = j.at("command").get<std::string>();
  r.suite = c.at("suite").get<std::string>();
  r.filter = c.at("filter").get<std::string>();
  r.seed = c.at("seed").get<uint64_t>();
  r.started_at = j.value("started_at", std::string());
  r.config.world = c.at("world").get<int>();
  r.config.geometry.name = c.at("geometry").value("name", std::string());
  r.config.backend = c.at("backend") == "host" ? BackendKind::kHost : BackendKind::kGpu;
  r.config.kernel = nlohmann::json::parse(c.at("kernel").dump()).get<KernelInfo>();
  if (!c.at("against").is_null()) {
    r.config.against = nlohmann::json::parse(c.at("against").dump()).get<KernelInfo>();
  }
  if (j.contains("environment") && j["environment"].is_object()) {
    const Json& e = j["environment"];
    EnvironmentInfo env;
    env.hostname = e.value("hostname", std::string());
    env.mps_mode = e.value("mps_mode", std::string());
    env.git_revision = e.value("git_revision", std::string());
    env.backend = e.value("backend", std::string());
    for (const Json& g : e.value("gpus", Json::array())) {
      GpuInfo gpu;
      gpu.index = g.value("index", 0);
      gpu.name = g.value("name", std::string());
      gpu.uuid = g.value("uuid", std::string());
      env.gpus.push_back(gpu);
    }
    r.environment = env;
  }
  return r;
}

}  // namespace

CaseResult case_from_report_json(const Json& j) {
  CaseResult r;
  r.case_id = j.at("id").get<std::string>();
  r.suite = j.value("suite", std::string());
  r.status = status_from(j.at("status").get<std::string>());
  const std::string type = j.value("failure_type", std::string());
  r.failure = type.empty() ? FailureKind::kNone
                           : failure_kind_from_string(type).value_or(FailureKind::kHarness);
  r.message = j.value("message", std::string());
  r.diagnosis = j.value("diagnosis", std::vector<std::string>{});
  r.replay = j.value("replay", std::string());
  r.elapsed_ms = j.value("elapsed_ms", 0.0);
  r.wall_ms = j.value("wall_ms", 0.0);
  for (const Json& rank : j.value("ranks", Json::array())) {
    r.ranks.push_back(nlohmann::json::parse(rank.dump()).get<RankCaseResult>());
  }
  std::string error;
  r.scenario = parse_case_id(r.case_id, &error);
  return r;
}

namespace {

// selftest --json documents: the same suite, world, geometry, backend, kernel,
// deadline and dcp-check; each shard's mutants; exit code the worst shard's.
MergedReport merge_selftest(const std::vector<ShardReport>& shards) {
  const auto id = [](const ShardReport& s) {
    const Json& j = s.json;
    if (!j.contains("tool") || !j.contains("kernel")) {
      refuse(s.path + ": a selftest report without tool and kernel (an older dcp-check)");
    }
    return std::vector<std::pair<std::string, std::string>>{
        {"dcp-check version", j["tool"].value("version", std::string()) + " (" +
                                  j["tool"].value("git_revision", std::string()) + ")"},
        {"suite", j.value("suite", std::string())},
        {"world", std::to_string(j.value("world", 0))},
        {"geometry", j.value("geometry", std::string())},
        {"backend", j.value("backend", std::string())},
        {"kernel", j["kernel"].value("name", std::string()) + " sha256 " +
                       j["kernel"].value("sha256", std::string())},
        {"timeout", std::to_string(j.value("timeout_s", 0.0))}};
  };
  const auto first_id = id(shards[0]);
  for (size_t i = 1; i < shards.size(); ++i) {
    if (!shards[i].json.contains("mutants")) {
      refuse(fmt::format("{} is a selftest report and {} is not", shards[0].path, shards[i].path));
    }
    const auto other = id(shards[i]);
    for (size_t f = 0; f < first_id.size(); ++f) {
      if (other[f] != first_id[f]) {
        refuse(fmt::format("{} and {} are not shards of one selftest: {} {} vs {}", shards[0].path,
                           shards[i].path, first_id[f].first, first_id[f].second, other[f].second));
      }
    }
  }
  MergedReport m;
  m.selftest = true;
  m.num_shards = static_cast<int>(shards.size());
  Json mutants = Json::array();
  int code = kExitPass;
  int detected = 0, survived = 0, not_here = 0;
  double elapsed = 0;
  bool correct_passed = true;
  for (const ShardReport& s : shards) {
    for (const Json& mu : s.json["mutants"]) mutants.push_back(mu);
    code = worse(code, s.json.value("exit_code", kExitHarness));
    detected += s.json.value("num_detected", 0);
    survived += s.json.value("num_survived", 0);
    not_here += s.json.value("num_not_catchable_here", 0);
    elapsed = std::max(elapsed, s.json.value("elapsed_s", 0.0));
    correct_passed = correct_passed && s.json.value("correct_passed", false);
  }
  std::sort(mutants.begin(), mutants.end(),
            [](const Json& a, const Json& b) { return a.value("id", 0) < b.value("id", 0); });
  m.json = shards[0].json;
  m.json.erase("shard");
  m.json["mutants"] = mutants;
  m.json["num_detected"] = detected;
  m.json["num_survived"] = survived;
  m.json["num_not_catchable_here"] = not_here;
  m.json["correct_passed"] = correct_passed;
  m.json["elapsed_s"] = elapsed;
  m.json["exit_code"] = code;
  m.json["merged"] = {{"num_shards", m.num_shards}};
  m.report.exit_code = code;
  m.verdict = fmt::format("selftest: {} of {} mutants detected, {} survived{} over {} reports",
                          detected, mutants.size(), survived,
                          not_here > 0 ? fmt::format(", {} not catchable here", not_here) : "",
                          shards.size());
  return m;
}

}  // namespace

MergedReport merge_reports(const std::vector<ShardReport>& shards) {
  if (shards.empty()) refuse("needs at least one --json report of a run, stress or selftest shard");
  if (shards[0].json.is_object() && shards[0].json.contains("mutants")) {
    // Every shard exactly once, as for runs.
    std::map<int, std::string> seen;
    int count = -1;
    for (const ShardReport& s : shards) {
      if (!s.json.is_object() || !s.json.contains("mutants")) {
        refuse(fmt::format("{} is a selftest report and {} is not", shards[0].path, s.path));
      }
      const ShardPos p = shard_of(s.json);
      if (count >= 0 && p.count != count) {
        refuse(fmt::format("{} is shard {}/{} but {} is of {} shards", s.path, p.index, p.count,
                           shards[0].path, count));
      }
      count = p.count;
      if (seen.count(p.index)) {
        refuse(fmt::format("{} and {} are both shard {}/{}", seen[p.index], s.path, p.index, count));
      }
      seen[p.index] = s.path;
    }
    for (int k = 0; k < count; ++k) {
      if (!seen.count(k)) {
        refuse(fmt::format("shard {}/{} is missing ({} of {} reports given)", k, count,
                           shards.size(), count));
      }
    }
    return merge_selftest(shards);
  }
  std::vector<std::vector<std::pair<std::string, std::string>>> ids;
  for (const ShardReport& s : shards) {
    const Json& j = s.json;
    if (!j.is_object() || !j.contains("schema_version") || !j.contains("tool") ||
        !j.contains("configuration")) {
      if (j.is_object() && j.contains("mutants")) {
        refuse(fmt::format("{} is a selftest report and {} is not", s.path, shards[0].path));
      }
      refuse(s.path + ": not a dcp-check run or stress --json report");
    }
    if (j["schema_version"] != kJsonSchemaVersion) {
      refuse(fmt::format("{}: schema_version {} (this dcp-check reads {})", s.path,
                         j["schema_version"].dump(), kJsonSchemaVersion));
    }
    const std::string command = j.value("command", std::string());
    if (command != "run" && command != "stress") {
      refuse(fmt::format("{}: a '{}' report (merge takes run and stress reports)", s.path, command));
    }
    try {
      ids.push_back(identity(j));
    } catch (const nlohmann::json::exception& e) {
      refuse(fmt::format("{}: not a complete dcp-check report ({})", s.path, e.what()));
    }
  }
  for (size_t i = 1; i < shards.size(); ++i) {
    for (size_t f = 0; f < ids[0].size(); ++f) {
      if (f >= ids[i].size() || ids[i][f] != ids[0][f]) {
        refuse(fmt::format("{} and {} are not shards of one run: {} {} vs {}", shards[0].path,
                           shards[i].path, ids[0][f].first, ids[0][f].second,
                           f < ids[i].size() ? ids[i][f].second : "(none)"));
      }
    }
  }
  // Every shard of 0..N-1 exactly once.
  const int count = shard_of(shards[0].json).count;
  std::map<int, size_t> by_index;  // shard index -> position in `shards`
  for (size_t i = 0; i < shards.size(); ++i) {
    const ShardPos p = shard_of(shards[i].json);
    if (p.count != count) {
      refuse(fmt::format("{} is shard {}/{} but {} is of {} shards", shards[i].path, p.index,
                         p.count, shards[0].path, count));
    }
    if (const auto it = by_index.find(p.index); it != by_index.end()) {
      refuse(fmt::format("{} and {} are both shard {}/{}", shards[it->second].path,
                         shards[i].path, p.index, count));
    }
    by_index[p.index] = i;
  }
  for (int k = 0; k < count; ++k) {
    if (!by_index.count(k)) {
      refuse(fmt::format("shard {}/{} is missing ({} of {} reports given)", k, count,
                         shards.size(), count));
    }
  }
  std::vector<const Json*> ordered;  // by shard index
  for (const auto& [k, i] : by_index) ordered.push_back(&shards[i].json);
  const Json& first = *ordered[0];
  const bool stress = first.at("command") == "stress";

  MergedReport m;
  m.num_shards = count;
  m.report = report_skeleton(first);
  RunReport& r = m.report;
  Json cases = Json::array();
  if (stress) {
    for (const Json* j : ordered) {
      for (const Json& c : j->at("cases")) cases.push_back(c);
    }
  } else {
    // Round-robin split (app/shard.h): suite case i is shard i % N's case i / N.
    int64_t total = 0;
    for (const Json* j : ordered) total += static_cast<int64_t>(j->at("cases").size());
    if (count > 1) {
      const int64_t suite_cases = first.at("shard").at("suite_cases").get<int64_t>();
      if (total != suite_cases) {
        refuse(fmt::format("the shards hold {} cases, the suite {} (a shard did not finish?)",
                           total, suite_cases));
      }
    }
    for (int64_t i = 0; i < total; ++i) {
      const Json& part = ordered[static_cast<size_t>(i % count)]->at("cases");
      cases.push_back(part.at(static_cast<size_t>(i / count)));
    }
  }
  int interrupted = 0;
  int shard_worst = kExitPass;
  for (const Json* j : ordered) {
    r.wall_s = std::max(r.wall_s, j->value("wall_s", 0.0));
    if (interrupted == 0) interrupted = j->value("interrupted_by_signal", 0);
    const int code = j->value("exit_code", 0);
    // A shard whose cases were all skipped says 2 alone; the merged cases decide that.
    if (code != kExitUsage) shard_worst = worse(shard_worst, code);
    r.started_at = std::min(r.started_at, j->value("started_at", std::string()));
  }
  for (const Json& c : cases) r.cases.push_back(case_from_report_json(c));
  r.interrupted_by = interrupted;
  r.exit_code = worse(exit_code(findings_of(r.cases, interrupted)), shard_worst);

  const Counts n = count_results(r.cases);
  Json& out = m.json;
  out = first;
  out.erase("shard");
  out.erase("phases");    // per shard's ranks: see each shard's report
  out.erase("coverage");  // of one shard's part
  out["started_at"] = r.started_at;
  out["wall_s"] = r.wall_s;
  out["interrupted_by_signal"] = interrupted;
  out["counts"] = {{"total", n.total}, {"passed", n.passed}, {"failed", n.failed},
                   {"errors", n.errors}, {"skipped", n.skipped}};
  out["verdict"] = verdict_word(r.exit_code);
  out["exit_code"] = r.exit_code;
  out["cases"] = cases;
  Json from = Json::array();
  for (const Json* j : ordered) {
    from.push_back({{"shard", j->contains("shard") ? (*j)["shard"] : Json(nullptr)},
                    {"command_line", j->value("command_line", std::string())},
                    {"hostname", j->contains("environment") && (*j)["environment"].is_object()
                                     ? (*j)["environment"].value("hostname", std::string())
                                     : std::string()},
                    {"exit_code", j->value("exit_code", 0)},
                    {"wall_s", j->value("wall_s", 0.0)}});
  }
  out["merged"] = {{"num_shards", count}, {"shards", from}};
  if (stress) {
    Json s = first.at("stress");
    int64_t scenarios = 0, calls = 0, skipped = 0;
    double calls_per_s = 0;
    Json failures = Json::array();
    Json seeds = Json::array();
    for (const Json* j : ordered) {
      const Json& js = j->at("stress");
      scenarios += js.value("num_scenarios", int64_t{0});
      calls += js.value("num_calls", int64_t{0});
      skipped += js.value("num_skipped", int64_t{0});
      calls_per_s += js.value("calls_per_s", 0.0);  // the shards ran side by side
      seeds.push_back(js.value("seed", std::string()));
      for (const Json& f : js.value("failures", Json::array())) failures.push_back(f);
    }
    s["num_scenarios"] = scenarios;
    s["num_calls"] = calls;
    s["num_skipped"] = skipped;
    s["calls_per_s"] = calls_per_s;
    s["failures"] = failures;
    s["shard_seeds"] = seeds;
    out["stress"] = s;
  }
  return m;
}

}  // namespace dcp
