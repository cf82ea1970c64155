// What a run produces: per-rank per-case results (sent by workers over the
// socket as JSON), merged per case by the supervisor, then handed to the
// reporters (terminal, --json, --junit). Field names here are the JSON names.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "axes.h"
#include "case.h"
#include "failure.h"
#include "phase_times.h"
#include "sanitizer_finding.h"

namespace dcp {

struct Mismatch {
  int rank = 0;        // global rank
  int op_idx = 0;      // which call (call * layers + layer)
  int token = 0;
  int head = 0;        // head within the rank's slice [0, H)
  int dim = 0;
  double got = 0;
  double want = 0;
  double err_ulps = 0;       // |got - want| in ULPs of the output dtype at want
  double tolerance_ulps = 0;
  std::string likely_source; // e.g. "source 2's partial, unweighted" or ""
};

// What comparing two kernels on the same case found (--against,
// impl_agreement.h), for one kind of element: the [T, H, D] outputs, or the
// [T, H] combined LSEs.
struct AgreementCounts {
  int64_t num_compared = 0;
  int64_t num_differing = 0;  // any bit differs (+0 vs -0 included)
  int64_t num_beyond = 0;     // beyond the bound: each one fails the case
  // The largest distance in ULPs (representable values of the element's
  // format from one to the other; infinite for a NaN or a size mismatch) and
  // where: got is the --against kernel's value, want the kernel's. Unset
  // while every element is bit-identical.
  double max_ulps = 0;
  std::optional<Mismatch> max_at;
};

struct Agreement {
  // --against-exact (or --impl both): every differing bit is beyond the
  // bound. Otherwise the bound is the reference tolerance (impl_agreement.h).
  bool exact = false;
  AgreementCounts output;
  AgreementCounts lse;  // nothing compared unless both kernels emit the combined LSE
};

// Sums the counts; the larger maximum wins (the earlier one on a tie).
void merge_agreement(Agreement& into, const Agreement& more);

// Which checker judged a rank's calls (--check): the device checker alone,
// both (the CPU checker's audit of the device checker: any disagreement is a
// harness failure), or the CPU checker alone.
struct CheckTally {
  int64_t device_calls = 0;   // judged by the device checker only
  int64_t audited_calls = 0;  // judged by both, verdicts compared
  int64_t cpu_calls = 0;      // judged by the CPU checker only
  int64_t disagreements = 0;  // audited calls whose verdicts differ (each a harness failure)
  CheckTally& operator+=(const CheckTally& o) {
    device_calls += o.device_calls;
    audited_calls += o.audited_calls;
    cpu_calls += o.cpu_calls;
    disagreements += o.disagreements;
    return *this;
  }
  int64_t calls() const { return device_calls + audited_calls + cpu_calls; }
};

struct RankCaseResult {
  std::string case_id;
  int rank = 0;
  bool passed = false;
  int64_t num_checked = 0;     // elements compared
  int64_t num_mismatches = 0;  // includes NaNs
  int64_t num_nan = 0;
  std::vector<Mismatch> first_mismatches;  // up to 8
  uint64_t output_hash = 0;    // 64-bit word-wise hash over every output byte of every call
  double elapsed_ms = 0;
  PhaseTimes phases;           // where elapsed_ms went (phase_times.h)
  CheckTally check;            // which checker judged the calls (JSON "check")
  double worker_ms = 0;        // the worker's: case message in .. result out (barriers included)
  std::string error;           // non-empty when the case could not complete
  std::string note;            // a pass that is worth a line (a capacity case: the refusal)
  // Set where the failure was found; kNone when passed. JSON: "failure" (its
  // name) and, for older readers, "error_kind" (error_class()).
  FailureKind failure = FailureKind::kNone;
  // --against: the two kernels compared on this rank (JSON "agreement", absent without).
  std::optional<Agreement> agreement;
};

enum class CaseStatus { kPass, kFail, kError, kSkipped };

struct CaseResult {
  std::string case_id;
  // The case itself, so reporters never re-parse ids; absent only for results
  // the supervisor records for an id it could not parse.
  std::optional<Case> scenario;
  std::string suite;
  CaseStatus status = CaseStatus::kSkipped;
  FailureKind failure = FailureKind::kNone;  // kFail/kError: the headline of the ranks' kinds
  std::string message;         // one-line summary of the failure or skip reason
  // A hang or fault seen from outside the kernel (wire/launch_diagnosis.h):
  // per rank and stream the stuck call's kernels, the forward-progress
  // verdict, the CONTROL regions side by side. Empty when nothing was observed.
  std::vector<std::string> diagnosis;
  std::string replay;          // full replay command line
  double elapsed_ms = 0;       // max over ranks
  double wall_ms = 0;          // the supervisor's: case sent .. every result in
  std::vector<RankCaseResult> ranks;
  // --sanitize: what compute-sanitizer reported while this case ran (or, for
  // the last case, at the workers' teardown). Any one fails the case.
  std::vector<SanitizerFinding> sanitizer_findings;
};

// Adds compute-sanitizer findings to `r`: the case fails (kSanitizer names
// it), its message leads with the first finding, and every finding gets a
// diagnosis line. `when`: "" or a note such as "at the workers' teardown".
void add_sanitizer_findings(CaseResult& r, const std::vector<SanitizerFinding>& findings,
                            const std::string& when = "");

void to_json(nlohmann::json& j, const Mismatch& m);
void from_json(const nlohmann::json& j, Mismatch& m);
void to_json(nlohmann::json& j, const AgreementCounts& a);
void from_json(const nlohmann::json& j, AgreementCounts& a);
void to_json(nlohmann::json& j, const Agreement& a);
void from_json(const nlohmann::json& j, Agreement& a);
void to_json(nlohmann::json& j, const PhaseTimes& p);
void from_json(const nlohmann::json& j, PhaseTimes& p);
void to_json(nlohmann::json& j, const CheckTally& k);
void from_json(const nlohmann::json& j, CheckTally& k);
void to_json(nlohmann::json& j, const RankCaseResult& r);
void from_json(const nlohmann::json& j, RankCaseResult& r);
std::string_view to_string(CaseStatus s);
// What a checked rank found: kNone, kMismatch, or kNan when every wrong element is NaN.
FailureKind check_failure(int64_t num_mismatches, int64_t num_nan, bool passed);
// The headline of the ranks' kinds (failure.h's order); kNone if none failed.
FailureKind case_failure(const std::vector<RankCaseResult>& ranks);

// geometry_json / geometry_from_json: cases/axes.h.

}  // namespace dcp
