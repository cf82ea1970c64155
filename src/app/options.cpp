#include "options.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include "kernel_plugin.h"

#include "errors.h"
#include "geometry.h"
#include "replay.h"
#include "sanitizer.h"
#include "selftest.h"
#include "suites.h"
#include "sync_mode.h"

namespace dcp {
namespace {

[[noreturn]] void usage(std::string message) { throw UsageError(std::move(message)); }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string preset_names() {
  std::vector<std::string> names;
  for (const auto& g : geometry_presets()) names.push_back(g.name);
  return join(names);
}

void check_choice(std::string_view flag, const std::string& value,
                  const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    usage(fmt::format("{} '{}': must be one of {}", flag, value, join(allowed)));
  }
}

// Pairs of (name, kind); "cuda-error" keeps the CLI spelling readable.
FaultSpec::Kind parse_fault_kind(std::string_view name) {
  using K = FaultSpec::Kind;
  static constexpr std::pair<std::string_view, K> kKinds[] = {
      {"crash", K::kCrash},     {"hang", K::kHang},           {"stall", K::kStall},
      {"corrupt", K::kCorrupt}, {"cuda-error", K::kCudaError}, {"oom", K::kOom}};
  for (const auto& [n, k] : kKinds) {
    if (n == name) return k;
  }
  usage(fmt::format(
      "--inject-fault: unknown fault kind '{}': must be one of crash, hang, stall, corrupt, "
      "cuda-error, oom",
      name));
}

int parse_nonneg_int(std::string_view text, std::string_view what, std::string_view whole) {
  int value = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0) {
    usage(fmt::format("--inject-fault '{}': {} '{}' is not a non-negative integer", whole, what,
                      text));
  }
  return value;
}

}  // namespace

bool CaseSelection::matches(const std::string& case_id) const {
  return !filter_re || std::regex_search(case_id, *filter_re);
}

void validate_world(int world) {
  if (world < kMinWorld || world > kMaxWorld) {
    usage(fmt::format("--world {}: must be between {} and {} (one worker process per rank)",
                      world, kMinWorld, kMaxWorld));
  }
}

void validate_geometry(const Geometry& g, int world) {
  const std::string what = g.name.empty() ? std::string("custom geometry") : "geometry " + g.name;
  if (g.heads_per_rank < 1 || g.heads_per_rank > kMaxHeadsPerRank) {
    usage(fmt::format("--heads-per-rank {}: must be between 1 and {}", g.heads_per_rank,
                      kMaxHeadsPerRank));
  }
  if (g.head_dim < 8 || g.head_dim > kMaxHeadDim || g.head_dim % 8 != 0) {
    usage(fmt::format("--head-dim {}: must be a multiple of 8 between 8 and {}", g.head_dim,
                      kMaxHeadDim));
  }
  if (g.max_tokens < 1 || g.max_tokens > kMaxTokens) {
    usage(fmt::format("--max-tokens {}: must be between 1 and {}", g.max_tokens, kMaxTokens));
  }
  // Padded backing storage must hold every head of the largest DCP group.
  if (g.storage_heads > 0 && world * g.heads_per_rank > g.storage_heads) {
    usage(fmt::format("{}: --world {} x {} heads per rank = {} heads do not fit its {}-head "
                      "padded storage",
                      what, world, g.heads_per_rank, world * g.heads_per_rank, g.storage_heads));
  }
}

Geometry resolve_geometry(const GeometryOptions& opts, int world) {
  std::optional<Geometry> preset = find_geometry(opts.name);
  if (!preset) {
    usage(fmt::format("--geometry '{}': unknown preset (known: {}; or use --heads-per-rank, "
                      "--head-dim, --max-tokens)",
                      opts.name, preset_names()));
  }
  Geometry g = *preset;
  const int heads = opts.heads_per_rank.value_or(g.heads_per_rank);
  const int dim = opts.head_dim.value_or(g.head_dim);
  const int max_tokens = opts.max_tokens.value_or(g.max_tokens);
  // Any override that changes a value makes the geometry custom, so case ids
  // carry the actual numbers (h<H>d<D>m<T>) and replay needs no flags.
  if (heads != g.heads_per_rank || dim != g.head_dim || max_tokens != g.max_tokens) {
    Geometry probe = g;
    probe.heads_per_rank = heads;
    probe.head_dim = dim;
    probe.max_tokens = max_tokens;
    validate_geometry(probe, world);  // before custom_geometry sees bad numbers
    g = custom_geometry(heads, dim, max_tokens, g.storage_heads);
  }
  validate_geometry(g, world);
  return g;
}

uint64_t parse_seed(std::string_view text) {
  std::string_view digits = text;
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    digits.remove_prefix(2);
    base = 16;
  }
  uint64_t value = 0;
  const auto* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, value, base);
  if (digits.empty() || ec != std::errc() || ptr != end) {
    usage(fmt::format("--seed '{}': must be an unsigned 64-bit integer (decimal or 0x-hex)",
                      text));
  }
  return value;
}

CaseSelection validate_selection(const SelectionOptions& opts) {
  CaseSelection sel;
  check_choice("--suite", opts.suite, suite_names());
  sel.suite = opts.suite;
  sel.seed = parse_seed(opts.seed);
  sel.filter = opts.filter;
  if (!opts.filter.empty()) {
    try {
      sel.filter_re.emplace(opts.filter, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      usage(fmt::format("--filter '{}': not a valid regular expression ({})", opts.filter,
                        e.what()));
    }
  }
  return sel;
}

FaultSpec parse_fault_spec(std::string_view text, int world) {
  FaultSpec spec;
  if (text.empty()) return spec;
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() != 4) {
    usage(fmt::format("--inject-fault '{}': expected KIND:RANK:CASE:OP (e.g. corrupt:1:0:0)",
                      text));
  }
  spec.kind = parse_fault_kind(parts[0]);
  spec.rank = parse_nonneg_int(parts[1], "RANK", text);
  spec.case_index = parse_nonneg_int(parts[2], "CASE", text);
  spec.op_idx = parse_nonneg_int(parts[3], "OP", text);
  if (spec.rank >= world) {
    usage(fmt::format("--inject-fault '{}': rank {} does not exist with --world {}", text,
                      spec.rank, world));
  }
  return spec;
}

void validate_output_path(std::string_view flag, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) usage(fmt::format("{}: needs a file name", flag));
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) usage(fmt::format("{} {}: is a directory", flag, path));
  fs::path dir = p.parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::exists(dir, ec)) {
    usage(fmt::format("{} {}: directory {} does not exist", flag, path, dir.string()));
  }
  if (!fs::is_directory(dir, ec)) {
    usage(fmt::format("{} {}: {} is not a directory", flag, path, dir.string()));
  }
  // Really try, the way the reports are written (a temporary file beside the
  // target, renamed over it): access(2) says yes to root even on read-only
  // mounts and /proc.
  const std::string probe = (dir / fmt::format(".dcp-check-probe-{}", ::getpid())).string();
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    usage(fmt::format("{} {}: cannot create files in {}: {}", flag, path, dir.string(),
                      std::strerror(errno)));
  }
  ::close(fd);
  std::string refusal;
  if (fs::exists(p, ec)) {
    // Swap the probe with the existing file and back: proves the final rename
    // works without touching the file's contents.
    if (::renameat2(AT_FDCWD, probe.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) == 0) {
      ::renameat2(AT_FDCWD, probe.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE);
    } else if (errno != EINVAL && errno != ENOSYS) {
      refusal = fmt::format("{} {}: cannot be replaced: {}", flag, path, std::strerror(errno));
    }
  }
  ::unlink(probe.c_str());
  if (!refusal.empty()) usage(refusal);
}

void validate_report_options(const ReportOptions& opts) {
  if (opts.quiet && opts.verbose) usage("-q/--quiet and -v/--verbose conflict: pick one");
  const std::pair<const char*, const std::string*> paths[] = {
      {"--json", &opts.json_path}, {"--junit", &opts.junit_path}, {"--csv", &opts.csv_path}};
  for (const auto& [flag, path] : paths) {
    if (!path->empty()) validate_output_path(flag, *path);
  }
  for (size_t i = 0; i < std::size(paths); ++i) {
    for (size_t j = i + 1; j < std::size(paths); ++j) {
      const std::string& a = *paths[i].second;
      const std::string& b = *paths[j].second;
      if (a.empty() || b.empty()) continue;
      std::error_code ec;
      if (a == b ||
          std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec)) {
        usage(fmt::format("{} and {} both write {}: give them different files", paths[i].first,
                          paths[j].first, a));
      }
    }
  }
}

SessionConfig make_session_config(const SessionOptions& opts, const ReportOptions& report,
                                  int world, const Geometry& geometry) {
  check_choice("--backend", opts.backend, {"gpu", "host"});
  check_choice("--mps", opts.mps, {"auto", "on", "off"});
  check_choice("--observe", opts.observe, {"on", "off"});
  if (!opts.check.empty()) check_choice("--check", opts.check, {"gpu", "cpu"});
  if (!std::isfinite(opts.timeout_s) || opts.timeout_s <= 0 || opts.timeout_s > kMaxTimeoutS) {
    usage(fmt::format("--timeout {}: must be a number of seconds > 0 and <= {}", opts.timeout_s,
                      kMaxTimeoutS));
  }
  SessionConfig config;
  config.world = world;
  config.geometry = geometry;
  config.backend = opts.backend == "host" ? BackendKind::kHost : BackendKind::kGpu;
  if (config.backend == BackendKind::kGpu) sync_mode_from_env();  // a bad DCP_SYNC: usage error
  if (config.backend == BackendKind::kHost && opts.mps == "on") {
    usage("--mps on needs --backend gpu (the host backend runs no GPU work)");
  }
  std::string kernel = opts.kernel;
  std::string against = opts.against;
  if (!opts.impl.empty()) {
    check_choice("--impl", opts.impl, {"direct", "stock", "both"});
    if (!opts.kernel.empty() || !opts.against.empty()) {
      usage("--impl is the older spelling of --kernel/--against: give one or the other");
    }
    kernel = opts.impl == "stock" ? "stock" : "direct";
    if (opts.impl == "both") against = "stock";
  }
  if (opts.against_exact && against.empty()) {
    usage("--against-exact needs --against KERNEL: it says how the two kernels are compared");
  }
  // --impl both: direct and stock share kernels/combine_device.cuh and round
  // once from the same fp32 sums in the same order, so they must agree bit for bit.
  config.against_exact = opts.against_exact || opts.impl == "both";
  if (kernel.empty()) kernel = kDefaultKernel;
  config.kernel = load_kernel(kernel)->info();
  if (!against.empty()) {
    if (against == kernel) usage(fmt::format("--against {}: the same kernel as --kernel", against));
    config.against = load_kernel(against)->info();
  }
  config.timeout_s = opts.timeout_s;
  config.observe_launches = opts.observe == "on";
  if (config.backend == BackendKind::kHost && opts.check == "gpu") {
    usage("--check gpu needs --backend gpu (the host backend checks on the CPU)");
  }
  config.profile.on_device = config.backend == BackendKind::kGpu && opts.check != "cpu";
  config.mps = opts.mps == "on" ? MpsMode::kOn : (opts.mps == "off" ? MpsMode::kOff : MpsMode::kAuto);
  config.fault = parse_fault_spec(opts.inject_fault, world);
  if (!opts.mutant.empty()) {
    const std::vector<MutantInfo> picked =
        select_mutants(mutants_for(config), opts.mutant);
    if (picked.size() != 1) usage(fmt::format("--mutant '{}': name exactly one", opts.mutant));
    config.mutant = picked[0].id;
  }
  config.verbosity = report.verbosity();
  apply_sanitize_option(opts, config);
  config.replay_line = [](const SessionConfig& c, const Case& k) {
    return replay_command(c, c.world, k);
  };
  return config;
}

void apply_sanitize_option(const SessionOptions& opts, SessionConfig& config) {
  if (opts.sanitize.empty()) return;
  check_choice("--sanitize", opts.sanitize, {"memcheck", "racecheck", "synccheck", "initcheck"});
  // Test only: DCP_TEST_SANITIZE_HOST=1 lets the host backend run its workers
  // under a stand-in sanitizer (tests/e2e_sanitize.sh tests the plumbing).
  const char* host_test = std::getenv("DCP_TEST_SANITIZE_HOST");
  if (config.backend != BackendKind::kGpu && (host_test == nullptr || *host_test != '1')) {
    usage("--sanitize needs --backend gpu: the host backend runs no GPU code to sanitize");
  }
  if (opts.mps == "on") {
    usage(
        "--sanitize with --mps on cannot run: compute-sanitizer does not support MPS clients "
        "(use --mps off or auto; under --sanitize auto runs without MPS)");
  }
  const std::optional<std::string> path = find_compute_sanitizer();
  if (!path) {
    usage(
        "--sanitize: compute-sanitizer not found ($DCP_COMPUTE_SANITIZER, $PATH, "
        "/usr/local/cuda/bin): install the CUDA toolkit's compute-sanitizer");
  }
  config.sanitize_tool = opts.sanitize;
  config.sanitizer_path = *path;
  config.mps = MpsMode::kOff;       // said in the header (cli_common.h sanitize_note)
  config.observe_launches = false;  // CUPTI and the sanitizer cannot both attach
}

void add_sanitize_option(CLI::App* app, SessionOptions& opts) {
  app->add_option("--sanitize", opts.sanitize,
                  "memcheck | racecheck | synccheck | initcheck: run every worker under NVIDIA "
                  "compute-sanitizer; any error it reports fails the case (GPU backend; no MPS, "
                  "no CUPTI observation; deadlines x20)");
}

ValidRun validate_run_options(const RunOptions& opts) {
  ValidRun v;
  validate_world(opts.world);
  const Geometry g = resolve_geometry(opts.geometry, opts.world);
  v.selection = validate_selection(opts.selection);
  validate_report_options(opts.report);
  v.config = make_session_config(opts.session, opts.report, opts.world, g);
  v.report = opts.report;
  v.shard = resolve_shard(opts.shard);
  touch_shard_status_file();
  return v;
}

ValidList validate_list_options(const ListOptions& opts) {
  ValidList v;
  validate_world(opts.world);
  v.world = opts.world;
  v.geometry = resolve_geometry(opts.geometry, opts.world);
  v.selection = validate_selection(opts.selection);
  if (opts.gpus && *opts.gpus < 1) usage(fmt::format("--gpus {}: must be at least 1", *opts.gpus));
  if (opts.backend != "gpu" && opts.backend != "host") {
    usage(fmt::format("--backend '{}': expected gpu or host", opts.backend));
  }
  return v;
}

namespace {
// --dump DIR: a directory (made here when missing, its parent must exist)
// that holds no earlier dump (a manifest.json), writable now.
void validate_dump_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    usage(fmt::format("--dump {}: exists and is not a directory", dir));
  }
  if (!fs::exists(dir, ec) && !fs::create_directory(dir, ec)) {
    usage(fmt::format("--dump {}: cannot create it: {}", dir, ec.message()));
  }
  if (fs::exists(fs::path(dir) / "manifest.json", ec)) {
    usage(fmt::format("--dump {}: already holds a dump (manifest.json): give an empty directory",
                      dir));
  }
  validate_output_path("--dump", (fs::path(dir) / "manifest.json").string());
}
}  // namespace

ValidReplay validate_replay_options(const ReplayOptions& opts) {
  ValidReplay v;
  ReplayToken token = parse_replay_token(opts.token);
  if (opts.repeat < 1 || opts.repeat > kMaxRepeat) {
    usage(fmt::format("--repeat {}: must be between 1 and {}", opts.repeat, kMaxRepeat));
  }
  validate_report_options(opts.report);
  v.config = make_session_config(opts.session, opts.report, token.world,
                                 token.the_case.geometry);
  v.the_case = token.the_case;
  v.repeat = opts.repeat;
  if (!opts.dump_dir.empty()) {
    if (opts.repeat != 1) usage("--dump with --repeat: dump one run (--repeat 1)");
    if (v.config.check_determinism) usage("--dump cannot be combined with the determinism rerun");
    validate_dump_dir(opts.dump_dir);
    v.config.dump_dir = std::filesystem::absolute(opts.dump_dir).string();
  }
  v.report = opts.report;
  return v;
}

void add_world_option(CLI::App* app, int& world) {
  app->add_option("-w,--world", world,
                  fmt::format("Ranks = worker processes, {}..{} (rank i uses GPU i % #GPUs); "
                              "every DCP group size dividing it runs (default {})",
                              kMinWorld, kMaxWorld, kMinWorld));
}

void add_geometry_options(CLI::App* app, GeometryOptions& opts) {
  app->add_option("-g,--geometry", opts.name,
                  fmt::format("Geometry preset (see `dcp-check list --geometries`; default {})",
                              kDefaultGeometry));
  app->add_option_function<int>(
      "--heads-per-rank", [&opts](const int& v) { opts.heads_per_rank = v; },
      fmt::format("Override heads per rank H (1..{})", kMaxHeadsPerRank));
  app->add_option_function<int>(
      "--head-dim", [&opts](const int& v) { opts.head_dim = v; },
      fmt::format("Override head dim D (multiple of 8, <= {})", kMaxHeadDim));
  app->add_option_function<int>(
      "--max-tokens", [&opts](const int& v) { opts.max_tokens = v; },
      fmt::format("Override workspace capacity max T (1..{})", kMaxTokens));
}

void add_selection_options(CLI::App* app, SelectionOptions& opts) {
  app->add_option("-s,--suite", opts.suite,
                  "Suite: smoke | default | full | upstream (default default)");
  app->add_option("-f,--filter", opts.filter, "Only cases whose id matches this regex");
  app->add_option("--seed", opts.seed, "Base seed mixed into every case (decimal or 0x-hex)");
}

void add_session_options(CLI::App* app, SessionOptions& opts) {
  app->add_option("-b,--backend", opts.backend,
                  "gpu (default; needs a GPU) | host (CPU model of the same protocol)");
  app->add_option("--kernel", opts.kernel,
                  "Kernel under test: direct (default) | stock | PATH of a plugin .so (docs/plugins.md)");
  app->add_option("--against", opts.against,
                  "A second kernel run on the same cases; both are checked, and their outputs "
                  "must agree within the reference tolerance (docs/plugins.md)");
  app->add_flag("--against-exact", opts.against_exact,
                "With --against: the two kernels must agree bit for bit (refactors)");
  app->add_option("--impl", opts.impl,
                  "Older spelling: direct | stock | both (= --against stock --against-exact)");
  app->add_option("-t,--timeout", opts.timeout_s, "Per-call deadline in seconds (default 10)");
  app->add_option("--mps", opts.mps, "auto (default) | on | off: CUDA MPS when ranks share a GPU");
  app->add_option("--check", opts.check,
                  "gpu (default on the GPU backend) | cpu: where each call's output is checked "
                  "against the float64 reference; with gpu the CPU checker audits about 1 call "
                  "in 64 and every call of a failing case, and any disagreement is exit 3");
  app->add_option("--observe", opts.observe,
                  "on (default) | off: observe every kernel launch with CUPTI (GPU backend): "
                  "hang diagnosis and residency warnings for any kernel");
  // Test-only: hidden from --help (an empty group hides an option in CLI11).
  app->add_option("--inject-fault", opts.inject_fault, "KIND:RANK:CASE:OP")->group("");
  app->add_option("--mutant", opts.mutant, "NAME")->group("");
}

void add_report_options(CLI::App* app, ReportOptions& opts, const ReportFlags& flags) {
  // Every path is proven writable before anything runs; each file is written atomically.
  if (!flags.json.empty()) {
    app->add_option("--json", opts.json_path, fmt::format("Write a JSON report ({})", flags.json));
  }
  if (flags.junit) {
    app->add_option("--junit", opts.junit_path, "Write a JUnit XML report (docs/report-format.md)");
  }
  if (flags.csv) app->add_option("--csv", opts.csv_path, "Write a CSV report (the same table)");
  if (flags.quiet) {
    app->add_flag("-q,--quiet", opts.quiet,
                  "Quiet: no header or progress lines; failures, tables and the verdict line only");
  }
  if (flags.verbose) {
    app->add_flag("-v,--verbose", opts.verbose,
                  "Verbose: more detail where the command has it (every case result, session "
                  "start-up, where each rank's time went)");
  }
}

}  // namespace dcp
