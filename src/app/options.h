// One options struct per command, bound directly to CLI11 flags, validated once
// (validate_*), then passed by const&. Validation throws UsageError with one
// line naming the flag and the problem; nothing downstream re-checks flags.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "case.h"
#include "session.h"
#include "shard.h"

namespace dcp {

inline constexpr int kMinWorld = 2;
inline constexpr int kMaxWorld = 8;
inline constexpr int kMaxHeadsPerRank = 128;
inline constexpr int kMaxHeadDim = 1024;
inline constexpr int kMaxTokens = 4096;
inline constexpr int kMaxRepeat = 1000;
inline constexpr double kMaxTimeoutS = 86400;
inline constexpr const char* kDefaultGeometry = "kimi";
inline constexpr const char* kDefaultSuite = "default";

// Geometry flags shared by run and list. Unset overrides keep the preset's value.
struct GeometryOptions {
  std::string name = kDefaultGeometry;
  std::optional<int> heads_per_rank;
  std::optional<int> head_dim;
  std::optional<int> max_tokens;
};

// Which cases: shared by run and list.
struct SelectionOptions {
  std::string suite = kDefaultSuite;
  std::string filter;    // ECMAScript regex, searched in the case id
  std::string seed = "0";  // decimal or 0x-hex, mixed into every case seed
};

// Flags of every command that starts a Session.
struct SessionOptions {
  std::string backend = "gpu";   // gpu | host
  std::string kernel;            // direct (default) | stock | PATH of a plugin library
  std::string against;           // a second kernel, compared within tolerance ("" none)
  bool against_exact = false;    // compare with --against bit for bit instead
  std::string impl;              // the older spelling: direct | stock | both (= direct --against
                                 // stock --against-exact)
  double timeout_s = 10;         // per-call deadline
  std::string mps = "auto";      // auto | on | off
  std::string observe = "on";    // on | off: CUPTI launch observation (GPU backend)
  std::string check;             // gpu | cpu: which checker judges every call ("": gpu on the
                                 // GPU backend, cpu on the host)
  std::string inject_fault;      // hidden, test only: KIND:RANK:CASE:OP
  std::string mutant;            // hidden, test only: a known-broken kernel variant (name or id),
                                 // so a stress/replay/shrink demo has a real bug to find
  std::string sanitize;  // run, replay: memcheck | racecheck | synccheck | initcheck ("" none)
};

// Report files and verbosity, for every command that has them.
struct ReportOptions {
  std::string json_path;
  std::string junit_path;
  std::string csv_path;  // bench only
  bool quiet = false;
  bool verbose = false;
  int verbosity() const { return quiet ? -1 : (verbose ? 1 : 0); }
};

struct RunOptions {
  int world = kMinWorld;
  GeometryOptions geometry;
  SelectionOptions selection;
  SessionOptions session;
  ReportOptions report;
  std::string shard;  // K/N ("" : from the scheduler's variables, else 0/1)
};

struct ListOptions {
  int world = kMinWorld;
  GeometryOptions geometry;
  SelectionOptions selection;
  bool geometries = false;  // list presets instead of cases
  bool suites = false;      // list suite names instead of cases
  bool families = false;    // list the case families and their counts
  std::string kernel;       // with a kernel: its declaration, and which cases it would skip
  // The session facts `list` cannot detect (no GPU): the suite is generated
  // for them. GPUs for the ranks (0: one per rank; fewer than --world: ranks
  // share a GPU) and the backend.
  std::optional<int> gpus;
  std::string backend = "gpu";
  bool coverage = false;    // print the suite's pairwise coverage instead of its cases
};

struct ReplayOptions {
  std::string token;  // w<world>-<case id>
  int repeat = 1;
  std::string dump_dir;  // --dump DIR: the case's tensors as .npy (worker/case_dump.h)
  SessionOptions session;
  ReportOptions report;
};

// A validated suite + filter + seed.
struct CaseSelection {
  std::string suite = kDefaultSuite;
  std::string filter;                   // as given ("" selects every case)
  std::optional<std::regex> filter_re;  // compiled once
  uint64_t seed = 0;
  bool matches(const std::string& case_id) const;
};

struct ValidRun {
  SessionConfig config;
  CaseSelection selection;
  ReportOptions report;
  Shard shard;
};

struct ValidList {
  int world = kMinWorld;
  Geometry geometry;
  CaseSelection selection;
};

struct ValidReplay {
  SessionConfig config;
  Case the_case;
  int repeat = 1;
  ReportOptions report;
};

ValidRun validate_run_options(const RunOptions& opts);
ValidList validate_list_options(const ListOptions& opts);
ValidReplay validate_replay_options(const ReplayOptions& opts);

// Building blocks (each throws UsageError with one line).
void validate_world(int world);
Geometry resolve_geometry(const GeometryOptions& opts, int world);
void validate_geometry(const Geometry& g, int world);
CaseSelection validate_selection(const SelectionOptions& opts);
uint64_t parse_seed(std::string_view text);
FaultSpec parse_fault_spec(std::string_view text, int world);
// -q with -v, and every report path proven writable and distinct from the others.
void validate_report_options(const ReportOptions& opts);
// Proves `path` can be written now (creates nothing that stays behind).
void validate_output_path(std::string_view flag, const std::string& path);
SessionConfig make_session_config(const SessionOptions& opts, const ReportOptions& report,
                                  int world, const Geometry& geometry);

// CLI11 bindings, so every command spells shared flags identically.
void add_world_option(CLI::App* app, int& world);
void add_geometry_options(CLI::App* app, GeometryOptions& opts);
void add_selection_options(CLI::App* app, SelectionOptions& opts);
void add_session_options(CLI::App* app, SessionOptions& opts);
// --sanitize TOOL (run and replay only: the commands whose report carries findings).
void add_sanitize_option(CLI::App* app, SessionOptions& opts);
// --sanitize's checks and what it changes in `config` (CUPTI off, MPS off);
// throws UsageError for a combination that cannot run.
void apply_sanitize_option(const SessionOptions& opts, SessionConfig& config);
// Which of the report flags a command takes; add_report_options declares them
// all, so every command spells and describes them alike.
struct ReportFlags {
  std::string json;  // what the JSON holds, for "--json: Write a JSON report (<json>)"; "": none
  bool junit = false;
  bool csv = false;
  bool quiet = true;
  bool verbose = true;
};
void add_report_options(CLI::App* app, ReportOptions& opts, const ReportFlags& flags);

}  // namespace dcp
