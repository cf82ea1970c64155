// The self-test engine: runs the correct kernel and every mutant through a
// suite, one fresh session per (kernel variant, profile), and classifies the
// outcome. See selftest.h for the invariants.
#include "selftest.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string_view>

#include "errors.h"
#include "families.h"
#include "host_mutants.h"
#include "mutants.h"
#include "pressure_rule.h"
#include "run_report.h"

namespace dcp {
namespace {

constexpr size_t kMaxCorrectFailures = 3;  // failures of the correct kernel kept for the message

bool is_failure(CaseStatus s) { return s == CaseStatus::kFail || s == CaseStatus::kError; }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Cases grouped by geometry, groups in order of first appearance, suite order
// kept within each: a session's workspace serves exactly one geometry, and a
// suite may mix (the default suite carries the upstream Kimi-K3 cases).
std::vector<std::vector<const Case*>> group_by_geometry(const std::vector<Case>& cases) {
  std::vector<std::vector<const Case*>> groups;
  for (const Case& c : cases) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.front()->geometry == c.geometry; });
    if (it == groups.end()) {
      groups.push_back({&c});
    } else {
      it->push_back(&c);
    }
  }
  return groups;
}

// Records one case's result: a detection when its kind is the kernel's.
void record(ProfileOutcome& out, const CaseResult& r, const Case& c,
            std::vector<CaseResult>* failures) {
  ++out.num_run;
  if (!is_failure(r.status)) return;
  if (failures != nullptr && failures->size() < kMaxCorrectFailures) failures->push_back(r);
  // A failed case nobody typed is the harness's own bug (as exit_code.h counts it).
  const FailureKind kind = r.failure == FailureKind::kNone ? FailureKind::kHarness : r.failure;
  if (!is_kernel_failure(kind)) {
    if (out.harness == FailureKind::kNone) {
      out.harness = kind;
      out.harness_message = r.message;
    }
    return;
  }
  ++out.num_caught;
  if (!out.detected) {
    out.detected = true;
    out.how = kind;
    out.first_case = r.case_id.empty() ? format_case_id(c) : r.case_id;
    out.first_message = r.message;
    out.first_replay = r.replay;
  }
}

// What a profile run amounts to for exit_code(): its detection, else its
// harness failure, else kHarness if it stopped early for no recorded reason.
FailureKind outcome_kind(const ProfileOutcome& p) {
  if (p.detected) return p.how;
  if (p.harness != FailureKind::kNone) return p.harness;
  return p.stopped.empty() ? FailureKind::kNone : FailureKind::kHarness;
}

// One suite run: which variant, under which profile, and what to collect.
struct ProfileRun {
  int mutant = 0;
  CheckProfile profile;
  const std::vector<Case>* cases = nullptr;
  std::string suite;
  bool stop_at_first = false;
  std::vector<CaseResult>* failures = nullptr;  // collects failing results when set
  EnvironmentInfo* env = nullptr;               // receives the first session's environment
};

// Runs the cases, one fresh session per geometry. With stop_at_first the run
// ends at the first failing case; it always ends when a session dies (a hang,
// crash or trap takes every worker down, and restarting per remaining case
// would cost one deadline each) or the user interrupts (a case that errors
// while interrupted says nothing about the kernel: it is not recorded).
ProfileOutcome run_cases(const SessionFactory& factory, const std::function<int()>& interrupted,
                         const ProfileRun& run) {
  const auto stop_signal = [&] { return interrupted ? interrupted() : 0; };
  ProfileOutcome out;
  out.num_cases = static_cast<int>(run.cases->size());
  const auto start = std::chrono::steady_clock::now();
  int num_visited = 0;  // run or skipped
  for (const auto& group : group_by_geometry(*run.cases)) {
    if ((out.interrupted_by = stop_signal()) != 0) break;
    std::unique_ptr<SelftestSession> session;
    try {
      session = factory(run.mutant, run.profile, group.front()->geometry);
    } catch (const KernelFault& e) {
      // The variant broke start-up itself: detected, by the fault, before any case.
      if (!out.detected) {
        out.detected = true;
        out.how = e.kind;
        out.first_case = "(start-up)";
        out.first_message = e.what();
      }
      out.stopped = "a session could not start";
      break;
    }
    if (run.env != nullptr && num_visited == 0) *run.env = session->environment();
    for (const Case* c : group) {
      if ((out.interrupted_by = stop_signal()) != 0) break;
      const CaseResult r = session->run_case(*c, run.suite);
      if ((out.interrupted_by = stop_signal()) != 0) break;
      if (r.status == CaseStatus::kSkipped && session->dead()) break;  // reported below
      ++num_visited;
      if (r.status != CaseStatus::kSkipped) record(out, r, *c, run.failures);
      const bool more = num_visited < out.num_cases;
      if (more && session->dead()) break;
      if (more && run.stop_at_first && out.detected) {
        out.stopped = "stopped at the first detection";
        break;
      }
    }
    if (out.interrupted_by != 0 || !out.stopped.empty()) break;
    if (session->dead() && num_visited < out.num_cases) {
      out.stopped = out.detected ? fmt::format("the {} ended the session", to_string(out.how))
                                 : std::string("the session died");
      break;
    }
  }
  if (out.interrupted_by != 0)
    out.stopped = fmt::format("interrupted by signal {}", out.interrupted_by);
  out.elapsed_s = seconds_since(start);
  return out;
}

MutantOutcome judge(const MutantInfo& m, const std::string& why_not_catchable, ProfileOutcome strict,
                    std::optional<ProfileOutcome> upstream) {
  const bool catchable_here = why_not_catchable.empty();
  MutantOutcome o;
  o.mutant = m;
  o.catchable_here = catchable_here;
  o.strict = std::move(strict);
  o.upstream = std::move(upstream);
  if (o.strict.detected) {
    o.verdict = MutantVerdict::kDetected;
    if (!catchable_here) o.note = "detected although marked not catchable here";
  } else if (o.strict.harness != FailureKind::kNone) {
    o.verdict = MutantVerdict::kHarnessError;
    o.note = fmt::format("HARNESS ERROR ({}), not a detection: {}", to_string(o.strict.harness),
                         o.strict.harness_message);
  } else if (!catchable_here) {
    o.verdict = MutantVerdict::kNotCatchableHere;
    o.note = "not catchable here: " + why_not_catchable;
  } else {
    o.verdict = MutantVerdict::kSurvived;
    o.note = "SURVIVED: the suite misses this bug";
  }
  if (!o.strict.stopped.empty() && o.strict.detected) {
    o.note += (o.note.empty() ? "" : "; ") + o.strict.stopped;
  }
  return o;
}

std::string summary_line(size_t idx, size_t total, const MutantOutcome& o) {
  std::string line = fmt::format("[{}/{}] {} ({}): {}", idx, total, o.mutant.name, o.mutant.kind,
                                 to_string(o.verdict));
  if (o.strict.detected) {
    line += fmt::format(" by {} in {}/{} cases", to_string(o.strict.how), o.strict.num_caught,
                        o.strict.num_run);
  }
  if (o.upstream) line += o.upstream->detected ? "; upstream: caught" : "; upstream: missed";
  return line + fmt::format(" ({:.1f} s)",
                            o.strict.elapsed_s + (o.upstream ? o.upstream->elapsed_s : 0.0));
}

}  // namespace

std::string_view to_string(MutantVerdict v) {
  switch (v) {
    case MutantVerdict::kDetected:
      return "detected";
    case MutantVerdict::kSurvived:
      return "SURVIVED";
    case MutantVerdict::kNotCatchableHere:
      return "not catchable here";
    case MutantVerdict::kHarnessError:
      return "harness error";
  }
  return "?";
}

std::vector<MutantInfo> mutants_for(const SessionConfig& config) {
  std::vector<MutantInfo> out;
  const KernelInfo& k = config.kernel;
  const bool builtin_direct = k.builtin && k.spec == "direct";
  if (!builtin_direct) {
    for (size_t i = 0; i < k.mutants.size(); ++i) {
      MutantInfo info;
      info.id = static_cast<int>(i) + 1;
      info.name = k.mutants[i];
      info.kind = "plugin";
      info.description = k.mutant_descriptions[i];
      info.family = declared_family(info.description);
      info.suite = family_suite(info.family);
      if (info.family == "memory-stress") {
        info.kind = "memory-ordering";
        info.needs_concurrent_ranks = true;
      }
      out.push_back(std::move(info));
    }
    return out;
  }
  if (config.backend == BackendKind::kHost) {
    // The host model runs each rank on its own CPU process: nothing is hidden by
    // a shared device, so every host mutant must be caught.
    for (const auto& m : kHostMutants) {
      MutantInfo info;
      info.id = m.id;
      info.name = m.name;
      info.kind = m.kind;
      info.description = m.description;
      info.family = m.family;
      out.push_back(std::move(info));
    }
    return out;
  }
  for (const auto& m : kGpuMutants) {
    out.push_back({m.id, std::string(m.name), std::string(m.kind), std::string(m.description),
                   m.catchable_on_shared_gpu, std::string(m.uncatchable_reason),
                   m.needs_concurrent_ranks, m.min_sources, std::string(m.family),
                   std::string(m.suite), std::string(m.needs_tool)});
  }
  return out;
}

std::string declared_family(const std::string& description) {
  if (!description.starts_with('[')) return "";
  const size_t close = description.find(']');
  if (close == std::string::npos) return "";
  const std::string name = description.substr(1, close - 1);
  for (const CaseFamily& f : case_families()) {
    if (f.name == name) return name;
  }
  return "";
}

std::string family_suite(const std::string& family) {
  if (family == "sm-pressure") return "pressure";
  if (family == "memory-stress") return "memstress";
  return "";
}

std::string why_not_catchable_here(const MutantInfo& m, const EnvironmentInfo& env) {
  if (!m.needs_tool.empty()) {
    // selftest runs no sanitizer: replay or run a case with the tool instead.
    return fmt::format("caught by {} only (run or replay a case with it and --mutant {})",
                       m.needs_tool, m.name);
  }
  if (!m.catchable_on_shared_gpu && env.ranks_share_gpu) return m.uncatchable_reason;
  if (m.needs_concurrent_ranks && env.ranks_share_gpu && !mps_active(env)) {
    return "ranks time-slice one GPU, so a peer sees the early signal only if a slice ends "
           "mid-call; it needs ranks that run at once (--mps on, or one GPU per rank)";
  }
  if (m.family == "sm-pressure") {
    if (std::string why = pressure_unrunnable_reason(env); !why.empty()) {
      return "its cases are skipped: " + why;
    }
  }
  const int world = static_cast<int>(env.rank_gpu.size());
  if (world > 0 && world < m.min_sources) {
    return fmt::format("it needs a DCP group of {} or more ranks (with fewer sources its mistake "
                       "changes no output); use --world {} or more",
                       m.min_sources, m.min_sources);
  }
  return "";
}

std::string why_not_catchable_in(const MutantInfo& m, const EnvironmentInfo& env,
                                 const std::string& suite) {
  if (std::string why = why_not_catchable_here(m, env); !why.empty()) return why;
  if (!m.suite.empty() && m.suite != suite) {
    return fmt::format("its {} cases are in --suite {}, not in suite {}", m.family, m.suite,
                       suite);
  }
  return "";
}

std::vector<MutantInfo> select_mutants(const std::vector<MutantInfo>& all,
                                       const std::string& selection) {
  if (selection.empty()) return all;
  std::vector<MutantInfo> picked;
  size_t pos = 0;
  while (pos <= selection.size()) {
    size_t comma = selection.find(',', pos);
    if (comma == std::string::npos) comma = selection.size();
    const std::string item = selection.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    auto it = std::find_if(all.begin(), all.end(), [&](const MutantInfo& m) {
      return m.name == item || std::to_string(m.id) == item;
    });
    if (it == all.end()) {
      std::string names;
      for (const auto& m : all) names += (names.empty() ? "" : ", ") + m.name;
      throw UsageError(fmt::format("--mutants: unknown mutant '{}' (known: {})", item, names));
    }
    if (std::none_of(picked.begin(), picked.end(),
                     [&](const MutantInfo& m) { return m.id == it->id; })) {
      picked.push_back(*it);
    }
  }
  if (picked.empty()) throw UsageError("--mutants: no mutant named");
  return picked;
}

int SelftestReport::num_detected() const {
  return static_cast<int>(std::count_if(mutants.begin(), mutants.end(), [](const auto& m) {
    return m.verdict == MutantVerdict::kDetected;
  }));
}
int SelftestReport::num_survived() const {
  return static_cast<int>(std::count_if(mutants.begin(), mutants.end(), [](const auto& m) {
    return m.verdict == MutantVerdict::kSurvived;
  }));
}
int SelftestReport::num_not_catchable_here() const {
  return static_cast<int>(std::count_if(mutants.begin(), mutants.end(), [](const auto& m) {
    return m.verdict == MutantVerdict::kNotCatchableHere;
  }));
}
int SelftestReport::exit_code() const { return ::dcp::exit_code(selftest_findings(*this)); }

Findings selftest_findings(const SelftestReport& r) {
  Findings f;
  f.interrupted_by = r.interrupted_by;
  f.must_pass.push_back(outcome_kind(r.correct));
  if (r.correct_upstream) f.must_pass.push_back(outcome_kind(*r.correct_upstream));
  for (const MutantOutcome& m : r.mutants) {
    const FailureKind kind = outcome_kind(m.strict);
    if (kind == FailureKind::kNone && !m.catchable_here) continue;  // forgiven: not catchable here
    f.must_fail.push_back(kind);
  }
  return f;
}

SelftestReport run_selftest(const SelftestPlan& plan, const SessionFactory& factory,
                            const SelftestProgress& progress) {
  SelftestReport report;
  run_selftest(plan, factory, report, progress);
  return report;
}

void run_selftest(const SelftestPlan& plan, const SessionFactory& factory, SelftestReport& report,
                  const SelftestProgress& progress) {
  const auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const auto start = std::chrono::steady_clock::now();
  const auto finish = [&](SelftestReport& r, int interrupted_by) {
    r.interrupted_by = interrupted_by;
    r.elapsed_s = seconds_since(start);
  };
  report = SelftestReport{};
  report.suite = plan.suite;
  const CheckProfile strict_profile{};
  const CheckProfile upstream_profile{.upstream = true};
  const bool with_upstream = !plan.upstream_cases.empty();

  EnvironmentInfo env;
  report.correct = run_cases(factory, plan.interrupted,
                             {.mutant = 0,
                              .profile = strict_profile,
                              .cases = &plan.cases,
                              .suite = plan.suite,
                              .failures = &report.correct_failures,
                              .env = &env});
  if (!env.backend.empty()) report.environment = env;  // empty: no session started
  report.backend = env.backend;
  report.ranks_share_gpu = env.ranks_share_gpu;
  if (report.correct.interrupted_by != 0) {
    finish(report, report.correct.interrupted_by);
    return;
  }
  say(fmt::format("correct kernel, suite {}: {} of {} cases failed ({:.1f} s)", plan.suite,
                  report.correct.num_caught, report.correct.num_cases, report.correct.elapsed_s));
  bool passed = outcome_kind(report.correct) == FailureKind::kNone;
  if (passed && with_upstream) {
    report.correct_upstream = run_cases(factory, plan.interrupted,
                                        {.mutant = 0,
                                         .profile = upstream_profile,
                                         .cases = &plan.upstream_cases,
                                         .suite = "upstream",
                                         .failures = &report.correct_failures});
    const auto& up = *report.correct_upstream;
    if (up.interrupted_by != 0) {
      finish(report, up.interrupted_by);
      return;
    }
    say(fmt::format("correct kernel, upstream profile: {} of {} cases failed ({:.1f} s)",
                    up.num_caught, up.num_cases, up.elapsed_s));
    passed = outcome_kind(up) == FailureKind::kNone;
  }
  report.correct_passed = passed;
  if (!passed) {
    finish(report, 0);
    return;  // mutants prove nothing against a checker that fails correct kernels
  }

  for (size_t i = 0; i < plan.mutants.size(); ++i) {
    const MutantInfo& m = plan.mutants[i];
    ProfileOutcome strict = run_cases(factory, plan.interrupted,
                                      {.mutant = m.id,
                                       .profile = strict_profile,
                                       .cases = &plan.cases,
                                       .suite = plan.suite,
                                       .stop_at_first = plan.fast});
    if (strict.interrupted_by != 0) {
      finish(report, strict.interrupted_by);  // a half-run mutant is not reported
      return;
    }
    std::optional<ProfileOutcome> upstream;
    if (with_upstream) {
      // Only "would it catch it" matters here: stop at the first detection.
      upstream = run_cases(factory, plan.interrupted,
                           {.mutant = m.id,
                            .profile = upstream_profile,
                            .cases = &plan.upstream_cases,
                            .suite = "upstream",
                            .stop_at_first = true});
      if (upstream->interrupted_by != 0) {
        finish(report, upstream->interrupted_by);
        return;
      }
    }
    report.mutants.push_back(
        judge(m, why_not_catchable_in(m, env, plan.suite), std::move(strict), std::move(upstream)));
    say(summary_line(i + 1, plan.mutants.size(), report.mutants.back()));
  }
  finish(report, 0);
}

// ---- reporting ----------------------------------------------------------

namespace {


std::string caught_cell(const ProfileOutcome& p) {
  if (p.num_run == p.num_cases) return fmt::format("{}/{}", p.num_caught, p.num_run);
  return fmt::format("{}/{} (of {})", p.num_caught, p.num_run, p.num_cases);
}

std::string upstream_cell(const std::optional<ProfileOutcome>& p) {
  if (!p) return "-";
  if (!p->detected) return "MISSED";
  return fmt::format("caught ({})", to_string(p->how));
}

std::string detected_cell(MutantVerdict v) {
  switch (v) {
    case MutantVerdict::kDetected:
      return "yes";
    case MutantVerdict::kSurvived:
      return "NO";
    case MutantVerdict::kNotCatchableHere:
      return "no (n/a here)";
    case MutantVerdict::kHarnessError:
      return "no (harness error)";
  }
  return "?";
}

// Left-aligned columns, two spaces apart; the last column is not padded.
std::string render_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string format_correct_failure(const SelftestReport& report) {
  std::string out = fmt::format("the correct kernel failed {} of {} cases of suite '{}'",
                                report.correct.num_caught, report.correct.num_cases, report.suite);
  if (report.correct_upstream && report.correct_upstream->detected) {
    out = fmt::format("the correct kernel failed {} of {} cases of the upstream profile",
                      report.correct_upstream->num_caught, report.correct_upstream->num_cases);
  } else if (!report.correct.detected && report.correct.harness != FailureKind::kNone) {
    out = fmt::format("the correct kernel's run failed in the harness ({}: {})",
                      to_string(report.correct.harness), report.correct.harness_message);
  } else if (!report.correct.detected && !report.correct.stopped.empty()) {
    out = fmt::format("the correct kernel's run ended early ({})", report.correct.stopped);
  }
  out +=
      ".\nA checker that fails a correct kernel is broken (or the kernel is): mutants were "
      "not run.\n";
  for (const auto& r : report.correct_failures) {
    out += fmt::format("  {} [{}]: {}\n", r.case_id, failure_type(r), r.message);
    if (!r.replay.empty()) out += fmt::format("    replay: {}\n", r.replay);
  }
  return out;
}

}  // namespace

std::string format_selftest_table(const SelftestReport& report, const std::string& rerun_prefix) {
  if (report.interrupted_by != 0 && !report.correct_passed) return "";  // the verdict says it
  if (!report.correct_passed) return format_correct_failure(report);
  std::string out = fmt::format(
      "correct kernel: passed all {} cases of suite '{}'{} ({:.1f} s)\n", report.correct.num_cases,
      report.suite,
      report.correct_upstream
          ? fmt::format(" and all {} upstream-profile cases", report.correct_upstream->num_cases)
          : std::string(),
      report.correct.elapsed_s +
          (report.correct_upstream ? report.correct_upstream->elapsed_s : 0.0));
  std::vector<std::vector<std::string>> rows = {
      {"mutant", "kind", "detected", "how", "family", "first case", "#cases caught", "upstream",
       "note"}};
  for (const auto& m : report.mutants) {
    const bool det = m.strict.detected;
    rows.push_back({m.mutant.name, m.mutant.kind, detected_cell(m.verdict),
                    det ? std::string(to_string(m.strict.how)) : "-",
                    m.mutant.family.empty() ? "-" : m.mutant.family,
                    det ? m.strict.first_case : "-",
                    caught_cell(m.strict),
                    upstream_cell(m.upstream), m.note});
  }
  if (!report.mutants.empty()) out += render_table(rows);

  std::vector<std::string> missed_upstream;
  for (const auto& m : report.mutants) {
    if (m.upstream && !m.upstream->detected) missed_upstream.push_back(m.mutant.name);
  }
  const std::string mps = report.environment && !report.environment->mps_mode.empty()
                              ? " (MPS " + report.environment->mps_mode + ")"
                              : std::string();
  out += fmt::format("mutants: {} detected, {} survived, {} not catchable here (of {}){}\n",
                     report.num_detected(), report.num_survived(), report.num_not_catchable_here(),
                     report.mutants.size(),
                     report.ranks_share_gpu ? "; ranks share a GPU" + mps : std::string());
  if (report.correct_upstream && !report.mutants.empty()) {
    out += missed_upstream.empty()
               ? std::string("upstream profile: catches every mutant\n")
               : fmt::format("upstream profile misses {} of {}: {}\n", missed_upstream.size(),
                             report.mutants.size(), fmt::join(missed_upstream, ", "));
  }
  for (const auto& m : report.mutants) {
    if (m.verdict == MutantVerdict::kSurvived) {
      out += fmt::format("SURVIVED: {} ({}): {}\n", m.mutant.name, m.mutant.kind,
                         m.mutant.description);
    } else if (m.verdict == MutantVerdict::kHarnessError) {
      out += fmt::format("HARNESS ERROR: {} ({}): {}\n", m.mutant.name, m.mutant.kind, m.note);
    }
  }
  // The whole case sequence, not the first case alone: the workspace's epochs
  // and flags carry over from case to case, so a protocol mutant caught at
  // case k may pass case k run alone (--filter reruns one case when it does not).
  if (!report.mutants.empty()) {
    out += "rerun one mutant (same case order, stops at its first detection):\n";
  }
  for (const auto& m : report.mutants) {
    out += fmt::format("  {} --mutants {} --fast --no-upstream\n", rerun_prefix, m.mutant.name);
  }
  return out;
}

std::string selftest_verdict(const SelftestReport& report) {
  if (report.interrupted_by != 0 && !report.correct_passed) {
    return fmt::format("selftest: interrupted by signal {} while running the correct kernel ({:.1f} s)",
                       report.interrupted_by, report.elapsed_s);
  }
  if (!report.correct_passed) {
    return fmt::format("selftest: the correct kernel did not pass, so no mutant ran ({:.1f} s)",
                       report.elapsed_s);
  }
  const std::string counts = fmt::format(
      "{} of {} mutants detected, {} survived{}", report.num_detected(), report.mutants.size(),
      report.num_survived(),
      report.num_not_catchable_here() > 0
          ? fmt::format(", {} not catchable here", report.num_not_catchable_here())
          : std::string());
  if (report.interrupted_by != 0) {
    return fmt::format("selftest: interrupted by signal {}: only the mutants above ran, {} ({:.1f} s)",
                       report.interrupted_by, counts, report.elapsed_s);
  }
  return fmt::format("selftest: {} ({:.1f} s)", counts, report.elapsed_s);
}

void to_json(nlohmann::json& j, const ProfileOutcome& p) {
  j = {{"detected", p.detected},         {"how", to_string(p.how)},
       {"first_case", p.first_case},     {"first_message", p.first_message},
       {"first_replay", p.first_replay}, {"num_cases", p.num_cases},
       {"num_run", p.num_run},           {"num_caught", p.num_caught},       {"harness", to_string(p.harness)},
       {"stopped", p.stopped},           {"interrupted_by", p.interrupted_by},
       {"elapsed_s", p.elapsed_s}};
}

void to_json(nlohmann::json& j, const SelftestReport& r) {
  nlohmann::json mutants = nlohmann::json::array();
  for (const auto& m : r.mutants) {
    nlohmann::json e = {{"id", m.mutant.id},
                        {"name", m.mutant.name},
                        {"kind", m.mutant.kind},
                        {"description", m.mutant.description},
                        {"family", m.mutant.family},
                        {"catchable_here", m.catchable_here},
                        {"verdict", to_string(m.verdict)},
                        {"note", m.note},
                        {"strict", m.strict}};
    e["upstream"] = m.upstream ? nlohmann::json(*m.upstream) : nlohmann::json();
    mutants.push_back(std::move(e));
  }
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& f : r.correct_failures) {
    failures.push_back({{"case_id", f.case_id},
                        {"status", to_string(f.status)},
                        {"message", f.message},
                        {"replay", f.replay}});
  }
  j = {{"suite", r.suite},
       {"backend", r.backend},
       {"ranks_share_gpu", r.ranks_share_gpu},
       {"correct_passed", r.correct_passed},
       {"correct", r.correct},
       {"correct_upstream",
        r.correct_upstream ? nlohmann::json(*r.correct_upstream) : nlohmann::json()},
       {"correct_failures", failures},
       {"mutants", mutants},
       {"num_detected", r.num_detected()},
       {"num_survived", r.num_survived()},
       {"num_not_catchable_here", r.num_not_catchable_here()},
       {"elapsed_s", r.elapsed_s},
       {"interrupted_by", r.interrupted_by},
       {"exit_code", r.exit_code()}};
}

}  // namespace dcp
