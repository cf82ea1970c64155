// The self-test: proves the checker can fail. It runs a suite on the correct
// kernel (which must pass: a checker that fails correct kernels is broken), then
// on every deliberately broken variant ("mutant") of the chosen backend, and
// records which mutants the suite detects, how, by which case first, and how
// many cases caught each. A second column runs the `upstream` suite with the
// upstream check profile (3e-2 against fp32) to show what a weaker test misses.
//
// The logic talks to sessions only through SelftestSession/SessionFactory, so
// it is unit-tested with a fake; the CLI wraps the real Session.
//
// Invariants:
// - every mutant and every profile gets a fresh session (a hang kills one);
// - a mutant the hardware cannot expose (catchable_here == false) that goes
//   undetected is reported as "not catchable here", never counted as caught,
//   and is the only kind of survivor the exit code forgives.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "case.h"
#include "checker.h"
#include "exit_code.h"
#include "results.h"
#include "session_config.h"

namespace dcp {

// One mutant as the self-test sees it, from kernels/mutants.h (GPU) or
// src/host_mutants.h (host).
struct MutantInfo {
  int id = 0;  // > 0; 0 is the correct kernel
  std::string name;
  std::string kind;  // protocol, memory-ordering, indexing, masking, ...
  std::string description;
  bool catchable_on_shared_gpu = true;  // false: needs ranks on distinct GPUs
  std::string uncatchable_reason;       // why, when the flag is false
  bool needs_concurrent_ranks = false;  // ranks sharing a GPU must run at once (MPS)
  int min_sources = 2;                  // the smallest DCP group that can expose it
  std::string family;                   // the case family that exists to catch it ("" none)
  std::string suite;  // the suite holding that family when the default suites do not ("" none)
  std::string needs_tool;  // caught only under this tool ("--sanitize memcheck"), "" none
};

// The mutants of the session's kernel, in table order (ids > 0): the host
// model's own with --backend host and the built-in kernel, else the ones the
// kernel declares through the plugin ABI (the built-in direct kernel's are
// kernels/mutants.h, with their kinds).
std::vector<MutantInfo> mutants_for(const SessionConfig& config);

// A plugin mutant is attributed to a case family by its description starting
// with "[family-name]" (e.g. "[memory-stress] flags stored relaxed ..."):
// the family's name, or "" when there is no such prefix or no such family.
std::string declared_family(const std::string& description);
// The suite that holds a family's cases when the default suites do not:
// "pressure" (sm-pressure), "memstress" (memory-stress), else "".
std::string family_suite(const std::string& family);

// Why a mutant cannot be exposed in this session ("" when it can): ordering
// mutants need ranks on distinct GPUs (ranks sharing one never observe the
// reordering), some need ranks that run at once (MPS or distinct GPUs), some a
// DCP group of at least min_sources ranks (world = env.rank_gpu.size()).
std::string why_not_catchable_here(const MutantInfo& m, const EnvironmentInfo& env);
// The same for a self-test of `suite`: also not catchable when the mutant's
// family lives in another suite (MutantInfo::suite).
std::string why_not_catchable_in(const MutantInfo& m, const EnvironmentInfo& env,
                                 const std::string& suite);
inline bool mutant_catchable_here(const MutantInfo& m, const EnvironmentInfo& env) {
  return why_not_catchable_here(m, env).empty();
}

// Picks mutants by comma-separated names or ids ("early-signal,3"); empty
// selects all. Throws UsageError naming an unknown entry and the valid names.
std::vector<MutantInfo> select_mutants(const std::vector<MutantInfo>& all,
                                       const std::string& selection);

// One live session under test (the real one wraps Session).
class SelftestSession {
 public:
  virtual ~SelftestSession() = default;
  virtual CaseResult run_case(const Case& c, const std::string& suite) = 0;
  virtual bool dead() const = 0;
  virtual const EnvironmentInfo& environment() const = 0;
};

// Starts a fresh session running `mutant` (0: correct kernel) under `profile`,
// its workspace sized for `geometry` (a session serves one geometry). May throw
// KernelFault (the mutant broke start-up: a detection of the fault's kind),
// UsageError or HarnessError (propagated: exit 2 / 3).
using SessionFactory = std::function<std::unique_ptr<SelftestSession>(
    int mutant, const CheckProfile& profile, const Geometry& geometry)>;

// One suite run against one kernel variant under one profile. A failing case
// is a detection only when its kind is the kernel's (is_kernel_failure); a
// harness kind (a worker that died outside the kernel included: exit_code.h)
// is not, and is kept apart in `harness`.
struct ProfileOutcome {
  bool detected = false;                     // some case failed with a kernel kind
  FailureKind how = FailureKind::kNone;      // of the first detecting case
  std::string first_case;                    // id of the first failing case
  std::string first_message;                 // its one-line diagnosis
  std::string first_replay;                  // its replay line (as the session wrote it)
  int num_cases = 0;                         // in the suite
  int num_run = 0;                           // actually run
  int num_caught = 0;                        // detecting cases
  FailureKind harness = FailureKind::kNone;  // the first harness-kind failure, if any
  std::string harness_message;               // its one-line diagnosis
  std::string stopped;                       // why the run ended before the last case, or ""
  int interrupted_by = 0;                    // the signal that stopped it (SIGINT/SIGTERM), or 0
  double elapsed_s = 0;
};

// kHarnessError: no detection, and a harness failure (the run proves nothing).
enum class MutantVerdict : uint8_t { kDetected, kSurvived, kNotCatchableHere, kHarnessError };
std::string_view to_string(MutantVerdict v);

struct MutantOutcome {
  MutantInfo mutant;
  bool catchable_here = true;
  ProfileOutcome strict;
  std::optional<ProfileOutcome> upstream;  // absent when the column is off
  MutantVerdict verdict = MutantVerdict::kSurvived;
  std::string note;
};

struct SelftestPlan {
  std::string suite = "default";
  std::vector<Case> cases;           // the suite, after any --filter
  std::vector<Case> upstream_cases;  // the `upstream` suite; empty: no upstream column
  std::vector<MutantInfo> mutants;
  bool fast = false;  // stop each mutant's strict run at its first detection
  // Polled between cases: the signal received (SIGINT/SIGTERM) or 0. Unset: never.
  std::function<int()> interrupted;
};

struct SelftestReport {
  std::string suite;
  std::string backend;  // "gpu" or "host"
  bool ranks_share_gpu = false;
  std::optional<EnvironmentInfo> environment;  // of the first session; absent if none started
  ProfileOutcome correct;                      // the suite on the correct kernel
  std::optional<ProfileOutcome> correct_upstream;
  std::vector<CaseResult> correct_failures;  // up to a few, for the message
  bool correct_passed = false;               // both runs above passed: mutants were run
  std::vector<MutantOutcome> mutants;        // complete outcomes only
  int interrupted_by = 0;                    // the run stopped early on this signal
  double elapsed_s = 0;

  int num_detected() const;
  int num_survived() const;  // catchable and undetected
  int num_not_catchable_here() const;
  // exit_code(selftest_findings(*this)): 0 the correct kernel passed and
  // every catchable mutant was detected; 1 the correct kernel failed or a
  // catchable mutant survived; 3 a harness failure with no detection (on the
  // correct kernel or a mutant); 128 + signal interrupted (the table is partial).
  int exit_code() const;
};

// The correct kernel's runs must pass (their kinds); each mutant but an
// undetected not-catchable-here one must fail (the kind that caught it, kNone
// if it survived, its harness kind if only the harness failed).
Findings selftest_findings(const SelftestReport& r);

// Progress lines for long runs ("[3/14] early-signal: detected (hang) ...").
using SelftestProgress = std::function<void(const std::string& line)>;

// Runs the plan. Exceptions other than KernelFault from the factory (and any
// HarnessError from a session) propagate; `report` then holds what completed.
void run_selftest(const SelftestPlan& plan, const SessionFactory& factory, SelftestReport& report,
                  const SelftestProgress& progress = {});
SelftestReport run_selftest(const SelftestPlan& plan, const SessionFactory& factory,
                            const SelftestProgress& progress = {});

// The human table (mutant | kind | detected | how | first case | #caught |
// upstream | note) and what it means, without the verdict line. `rerun_prefix`
// is the command line of this selftest configuration (" --mutants NAME --fast
// --no-upstream" is appended to rerun one mutant).
std::string format_selftest_table(const SelftestReport& report, const std::string& rerun_prefix);
// What follows "<VERDICT>: " on the last line, e.g. "selftest: 9 of 9 mutants
// detected (41.2 s)".
std::string selftest_verdict(const SelftestReport& report);

void to_json(nlohmann::json& j, const ProfileOutcome& p);
void to_json(nlohmann::json& j, const SelftestReport& r);

}  // namespace dcp
