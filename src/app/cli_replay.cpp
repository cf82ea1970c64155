// `dcp-check replay <token>`: rerun exactly one case (same inputs, same call
// sequence) in a fresh session; with --repeat K, tell flaky from deterministic
// by counting failed runs and comparing every rank's output hash across runs.
#include <algorithm>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli.h"
#include "cli_common.h"
#include "dump_manifest.h"
#include "command_lifecycle.h"
#include "options.h"
#include "run_report_command.h"
#include "shrink_runner.h"

namespace dcp {
namespace {

constexpr const char* kReplaySuite = "replay";

// Hashes of every rank, ordered by rank; empty when the run did not complete.
std::vector<uint64_t> rank_hashes(const CaseResult& r) {
  if (r.status != CaseStatus::kPass && r.status != CaseStatus::kFail) return {};
  std::vector<std::pair<int, uint64_t>> by_rank;
  for (const auto& k : r.ranks) by_rank.emplace_back(k.rank, k.output_hash);
  std::sort(by_rank.begin(), by_rank.end());
  std::vector<uint64_t> out;
  for (const auto& [rank, hash] : by_rank) out.push_back(hash);
  return out;
}

RepeatSummary summarize_repeats(const std::vector<CaseResult>& runs) {
  RepeatSummary s;
  std::optional<std::vector<uint64_t>> first;
  for (const auto& r : runs) {
    if (r.status == CaseStatus::kSkipped) continue;
    ++s.runs;
    if (r.status != CaseStatus::kPass) ++s.failed_runs;
    std::vector<uint64_t> h = rank_hashes(r);
    if (h.empty()) continue;
    if (!first) {
      first = h;
    } else if (*first != h) {
      s.hashes_identical = false;
    }
  }
  return s;
}

class ReplayCommand : public RunReportCommand {
 public:
  ReplayCommand(const ValidReplay& v, const std::vector<std::string>& argv)
      : RunReportCommand("replay", argv, v.config, v.report), v_(v) {
    planned_.assign(v.repeat, v.the_case);
    report_.suite = kReplaySuite;
    report_.seed = v.the_case.seed;
  }

  void run(CommandLifecycle& life) override {
    life.term().begin(fmt::format("dcp-check replay: {} x{}, world {}, backend {}",
                                  format_case_id(v_.the_case), v_.repeat, v_.config.world,
                                  v_.config.backend == BackendKind::kHost ? "host" : "gpu"),
                      v_.repeat);
    // A hang or crash kills the session; later repeats get a fresh one so
    // that K runs really are K attempts (a kernel or harness fault mid-case
    // becomes the case's result).
    if (!v_.config.sanitize_tool.empty()) life.term().info(sanitize_note(v_.config));
    RestartingSession session(v_.config);
    run_cases(
        life,
        [&](const Case& c) {
          CaseResult r = session.run(c, kReplaySuite);
          if (session.environment() != nullptr) report_.environment = *session.environment();
          return r;
        },
        [] { return false; });
    double shutdown_s = 0;
    session.shut_down(&shutdown_s);  // the sanitizer's last words come at the teardown
    add_late_sanitizer_findings(life.term(), session.late_findings());
    if (!v_.config.dump_dir.empty() && !report_.cases.empty()) {
      const auto m =
          write_dump_manifest(v_.config.dump_dir, v_.config, v_.the_case, report_.cases.back());
      size_t tensors = 0;
      for (const auto& rank : m["ranks"]) tensors += rank["tensors"].size();
      life.term().info(fmt::format(
          "dump: {} tensors of {} ranks in {}/manifest.json{} (docs/dump_check.py recomputes the "
          "combine from them)",
          tensors, m["ranks"].size(), v_.config.dump_dir,
          m["missing_ranks"].empty()
              ? ""
              : fmt::format(", ranks {} missing", m["missing_ranks"].dump())));
    }
  }

  void record(const Outcome& o) override {
    RunReportCommand::record(o);
    report_.repeat = summarize_repeats(report_.cases);
  }

  void summary(TerminalReporter& term, const Outcome& o) const override {
    if (v_.repeat > 1) {
      const RepeatSummary& s = *report_.repeat;
      term.note(fmt::format("repeat: {} of {} runs failed; output hashes {} ({})", s.failed_runs,
                            s.runs, s.hashes_identical ? "identical" : "DIFFER",
                            s.hashes_identical ? (s.failed_runs == 0 || s.failed_runs == s.runs
                                                      ? "deterministic"
                                                      : "deterministic bits, flaky verdict")
                                               : "flaky"));
    }
    RunReportCommand::summary(term, o);
  }

 private:
  const ValidReplay& v_;
};

}  // namespace

CLI::App* add_replay_command(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<ReplayOptions>();
  CLI::App* sub = app.add_subcommand(
      "replay", "Rerun exactly one case from its token w<world>-<case id> (printed on failure)");
  sub->add_option("token", opts->token, "w<world>-<case id>, e.g. w4-dcp2-kimi-...")->required();
  sub->add_option("-r,--repeat", opts->repeat,
                  fmt::format("Run it K times (1..{}): counts failures, compares output hashes",
                              kMaxRepeat));
  add_session_options(sub, opts->session);
  add_sanitize_option(sub, opts->session);
  sub->add_option("--dump", opts->dump_dir,
                  "Write the case's per-rank inputs, outputs, float64 reference and mismatch mask "
                  "as NumPy .npy files with a manifest.json into DIR (docs/dump_check.py)");
  add_report_options(sub, opts->report, {.json = "docs/report-format.md", .junit = true});
  sub->callback([opts, &ctx] {
    ctx.action = [opts, &ctx] {
      const ValidReplay v = validate_replay_options(*opts);
      return execute_command<ReplayCommand>(v.report.verbosity(), v, ctx.argv);
    };
  });
  return sub;
}

}  // namespace dcp
