// `dcp-check list`: case ids of a suite (pure function of the options, no GPU),
// its pairwise coverage, geometry presets with their sources, suite names, or
// the case families.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include <algorithm>

#include "cli.h"
#include "cli_common.h"
#include "coverage.h"
#include "families.h"
#include "geometry.h"
#include "kernel_plugin.h"
#include "options.h"
#include "suites.h"

namespace dcp {
namespace {

void print_geometries() {
  for (const Geometry& g : geometry_presets()) {
    std::string storage = g.storage_heads > 0 ? fmt::format(" storage={}", g.storage_heads) : "";
    fmt::print("{:<10} H={:<3} D={:<4} maxT={:<5}{}  {}\n", g.name, g.heads_per_rank, g.head_dim,
               g.max_tokens, storage, g.source);
  }
}

// Each family with the number of the selected suite's cases in it.
void print_families(const std::vector<Case>& cases) {
  size_t width = 0;
  for (const CaseFamily& f : case_families()) width = std::max(width, f.name.size());
  for (const CaseFamily& f : case_families()) {
    size_t n = 0;
    for (const Case& c : cases) n += f.member(c) ? 1 : 0;
    fmt::print("{:<{}} {:>4} of {} cases  {}\n{:<{}} catches: {}\n", f.name, width, n, cases.size(),
               f.what, "", width, f.catches);
  }
}

int list_command(const ListOptions& opts) {
  const ValidList v = validate_list_options(opts);  // even with --suites: never 0 on a bad flag
  if (opts.suites) {
    for (const auto& name : suite_names()) fmt::print("{}\n", name);
    return 0;
  }
  if (opts.geometries) {
    print_geometries();
    return 0;
  }
  if (opts.families) {
    print_families(select_cases(v.world, v.geometry, v.selection));
    return 0;
  }
  RunTarget target;
  target.world = v.world;
  target.ranks_share_gpu = opts.gpus && *opts.gpus < v.world;
  target.host_backend = opts.backend == "host";
  if (!opts.kernel.empty()) {
    target.kernels = {load_kernel(opts.kernel)->info()};
    const KernelInfo& k = target.kernels.front();
    fmt::print("# {}\n# memory {}, out dtypes 0x{:x}, LSE dtypes 0x{:x}, bases 0x{:x}, groups <= {}, "
               "slots <= {}, epoch kind {}, set_epoch {}, {} mutant(s)\n# capabilities: {}\n",
               kernels_text(k, nullptr), k.memory == DCP_MEMORY_HOST ? "host" : "device",
               k.out_dtypes, k.lse_dtypes, k.lse_bases, k.max_group_size, k.max_slots,
               k.epoch_kind, k.has_set_epoch ? "yes" : "no", k.mutants.size(),
               capability_list(k.capabilities));
  }
  // Generated for the target: this kernel, --gpus and --backend (list has no
  // GPU to find them); SM pressure under MPS is decided at run time.
  const std::vector<Case> cases = select_cases(v.world, v.geometry, v.selection, target);
  if (opts.coverage) {
    const Coverage cov = suite_coverage(cases, suite_options(v.world, v.geometry, v.selection, target));
    fmt::print("# suite {}: {} cases, world {}, {}, backend {}\n{}", v.selection.suite,
               cases.size(), v.world,
               target.ranks_share_gpu ? fmt::format("{} GPU(s) shared by the ranks", *opts.gpus)
                                      : std::string("one GPU per rank"),
               opts.backend, coverage_text(cov));
    std::fflush(stdout);
    return 0;
  }
  for (const Case& c : cases) {
    const std::string why = run_skip_reason(target, c);
    if (why.empty()) {
      fmt::print("{}\n", format_case_id(c));
    } else {
      fmt::print("{}  # skipped: {}\n", format_case_id(c), why);
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

CLI::App* add_list_command(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<ListOptions>();
  CLI::App* sub = app.add_subcommand(
      "list",
      "Print case ids (one per line; no GPU needed), --geometries, --suites or --families");
  add_world_option(sub, opts->world);
  add_geometry_options(sub, opts->geometry);
  add_selection_options(sub, opts->selection);
  CLI::Option* geometries =
      sub->add_flag("--geometries", opts->geometries, "List geometry presets and their sources");
  CLI::Option* suites = sub->add_flag("--suites", opts->suites, "List suite names");
  CLI::Option* families = sub->add_flag(
      "--families", opts->families,
      "List the case families (field failures) with their counts in the selected suite");
  sub->add_option("--kernel", opts->kernel,
                  "Generate the suite for this kernel's declaration (shown) and mark the cases "
                  "it would still skip");
  sub->add_option("--gpus", opts->gpus,
                  "GPUs the ranks would run on: fewer than --world means ranks share a GPU "
                  "(default: one GPU per rank)");
  sub->add_option("-b,--backend", opts->backend, "gpu (default) | host: the backend to plan for");
  CLI::Option* coverage = sub->add_flag(
      "--coverage", opts->coverage,
      "Print the suite's pairwise coverage (per axis pair: covered / allowed / impossible "
      "here, with the reasons) instead of its cases");
  geometries->excludes(suites);
  families->excludes(geometries)->excludes(suites);
  coverage->excludes(geometries)->excludes(suites)->excludes(families);
  sub->callback([opts, &ctx] { ctx.action = [opts] { return list_command(*opts); }; });
  return sub;
}

}  // namespace dcp
