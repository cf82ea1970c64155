// Suites. `default` is a greedy pairwise covering array, built once per DCP
// group size, over the main axes and the secondary ones (every pair of values
// of any two axes that the target allows appears with every group size:
// suite_space.h, covering_array.h), plus the upstream test's
// own cases and the field-failure families' cases (families.h). `full` is the
// product of the main axes, secondary axes cycled.
// The axes and their values are the table's (cases/axes.h).
#include "suites.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "axes.h"
#include "covering_array.h"
#include "geometry.h"
#include "mix.h"
#include "suite_space.h"

namespace dcp {
namespace {

void set_seed(Case& c, uint64_t base_seed) {
  c.seed = 0;
  std::string id = format_case_id(c);
  id.resize(id.rfind("-s"));  // the id without its seed
  c.seed = mix64(fnv1a(id) ^ mix64(base_seed + kGolden)) & 0xFFFFFF;
}

// Appends `c` unless an equal case is already there (families built from a few
// parameters per group size may repeat one).
void add_unique(std::vector<Case>& cases, const Case& c) {
  if (std::find(cases.begin(), cases.end(), c) == cases.end()) cases.push_back(c);
}

void finish(std::vector<Case>& cases, uint64_t base_seed) {
  for (Case& c : cases) set_seed(c, base_seed);
}

// A case the target refuses only for a value its family does not test takes
// the first allowed one, trying output dtype, LSE dtype, LSE base and no empty
// shards (no family tests these: families.h); nullopt when none runs.
std::optional<Case> adapted_case(const Case& c, const SuiteOptions& opts) {
  for (DType out : {c.out_dtype, DType::kFp16, DType::kBf16}) {
    for (DType lse : {c.lse_dtype, DType::kFp32, DType::kFp16, DType::kBf16}) {
      for (LseBase base : {c.lse_base, LseBase::k2, LseBase::kE}) {
        for (EmptyPattern e : {c.empty, EmptyPattern::kNone}) {
          Case a = c;
          a.out_dtype = out, a.lse_dtype = lse, a.lse_base = base, a.empty = e;
          set_seed(a, opts.base_seed);
          if (opts.skip_reason(a).empty()) return a;
        }
      }
    }
  }
  return std::nullopt;
}

// Adapts cases[from..] to the target (adapted_case); an adapted case the suite
// already holds is dropped. What still cannot run stays: the run skips it by
// name, with the reason.
void adapt_to_target(std::vector<Case>& cases, size_t from, const SuiteOptions& opts) {
  if (!opts.skip_reason) return;
  for (size_t k = from; k < cases.size(); ++k) {
    if (opts.skip_reason(cases[k]).empty()) continue;
    const std::optional<Case> a = adapted_case(cases[k], opts);
    if (!a) continue;
    if (std::find(cases.begin(), cases.end(), *a) != cases.end()) {
      cases.erase(cases.begin() + static_cast<std::ptrdiff_t>(k--));
    } else {
      cases[k] = *a;
    }
  }
}

// The capacity family: T = max_tokens + 1, which every rank must refuse before
// it enters the exchange. Per group size: one eager call, and two pipelined
// calls on two slots with padded strides and an empty shard (a kernel that
// checks capacity only on some path must still refuse).
std::vector<Case> capacity_cases(const SuiteOptions& opts, const Geometry& g) {
  std::vector<Case> cases;
  for (int w : dcp_sizes_for_world(opts.world)) {
    Case c;
    c.geometry = g;
    c.dcp_size = w;
    c.num_tokens = g.max_tokens + 1;
    cases.push_back(c);
    c.mode = ExecMode::kPipelined;
    c.num_calls = 2;
    c.num_slots = 2;
    c.empty = EmptyPattern::kOne;
    set_stride(c, Stride::kPadBoth);
    cases.push_back(c);
  }
  finish(cases, opts.base_seed);
  return cases;
}

// A family's case: group size w, T clipped to the workspace, the mode and its
// call count, slots and empty pattern; every other axis at its default.
Case family_case(const Geometry& g, int w, int tokens, ExecMode mode, int calls, int slots,
                 EmptyPattern e) {
  Case c;
  c.geometry = g;
  c.dcp_size = w;
  c.num_tokens = std::min(tokens, g.max_tokens);
  c.mode = mode;
  c.num_calls = calls;
  c.num_slots = slots;
  c.empty = e;
  return c;
}

// The producer families (KERNELS.md failure mode 4, worst at T = 1-2 under
// graphs): per group size, the slow producer eager and graph-replayed, and
// with PDL eager, pipelined on two slots, and graph-replayed on two slots with
// an empty shard (so seq_lens is read under PDL too).
std::vector<Case> producer_cases(const SuiteOptions& opts, const Geometry& g) {
  std::vector<Case> cases;
  auto add = [&](int w, Producer p, int tokens, ExecMode mode, int calls, int slots,
                 EmptyPattern e) {
    Case c = family_case(g, w, tokens, mode, calls, slots, e);
    c.producer = p;
    cases.push_back(c);
  };
  for (int w : dcp_sizes_for_world(opts.world)) {
    add(w, Producer::kSlow, 1, ExecMode::kEager, 2, 1, EmptyPattern::kNone);
    add(w, Producer::kSlow, 2, ExecMode::kGraph, 3, 1, EmptyPattern::kNone);
    add(w, Producer::kSlowPdl, 1, ExecMode::kEager, 2, 1, EmptyPattern::kNone);
    add(w, Producer::kSlowPdl, 2, ExecMode::kPipelined, 4, 2, EmptyPattern::kNone);
    add(w, Producer::kSlowPdl, 1, ExecMode::kGraph, 3, 2, EmptyPattern::kOne);
  }
  finish(cases, opts.base_seed);
  return cases;
}

// The graph-set family: per group size and slot count, T = max_tokens and a
// mid T (17), 8 calls so the busiest slot replays after another capture;
// the two-slot cases churn allocations around their graphs too.
std::vector<Case> graph_set_cases(const SuiteOptions& opts, const Geometry& g) {
  std::vector<Case> cases;
  for (int w : dcp_sizes_for_world(opts.world)) {
    for (int slots : {1, 2}) {
      for (int tokens : {g.max_tokens, std::min(17, g.max_tokens)}) {
        Case c;
        c.geometry = g;
        c.dcp_size = w;
        c.num_tokens = tokens;
        c.num_slots = slots;
        c.mode = ExecMode::kGraphSet;
        c.num_calls = 8;
        if (slots == 2) set_stride(c, Stride::kPadBoth), c.churn = true;
        add_unique(cases, c);
      }
    }
  }
  finish(cases, opts.base_seed);
  return cases;
}

// The SM-pressure family (KERNELS.md: forward progress), in default and full
// and alone as the `pressure` suite (docs/DESIGN.md, "SM pressure"): per group size, two
// slots in flight under a co-running kernel that takes 90% of the rank's SMs
// (pipelined with skew at T = 64, and at T = max_tokens with an empty shard,
// where the grids are largest) and 50% (eager, T = 32).
std::vector<Case> pressure_cases(const SuiteOptions& opts, const Geometry& g) {
  std::vector<Case> cases;
  auto add = [&](int w, int pressure, int tokens, ExecMode mode, int calls, bool skew,
                 EmptyPattern e) {
    Case c = family_case(g, w, tokens, mode, calls, /*slots=*/2, e);
    c.pressure = pressure;
    c.skew = skew;
    add_unique(cases, c);
  };
  for (int w : dcp_sizes_for_world(opts.world)) {
    add(w, 90, 64, ExecMode::kPipelined, 8, true, EmptyPattern::kNone);
    add(w, 90, g.max_tokens, ExecMode::kPipelined, 4, false, EmptyPattern::kOne);
    add(w, 50, 32, ExecMode::kEager, 4, false, EmptyPattern::kNone);
  }
  finish(cases, opts.base_seed);
  return cases;
}

// The memory-stress family (docs/DESIGN.md, "Weak memory on one GPU"), alone
// as the `memstress` suite: per group size, many calls under the co-running
// memory stress, where a reordered payload has the most chances to be read:
// two slots pipelined with skew (T = 64 and max_tokens), one slot eager (T =
// 17, an empty shard) and pipelined (T = 1, the smallest payload per flag).
std::vector<Case> memstress_cases(const SuiteOptions& opts, const Geometry& g) {
  std::vector<Case> cases;
  auto add = [&](int w, int tokens, ExecMode mode, int calls, int slots, bool skew,
                 EmptyPattern e) {
    Case c = family_case(g, w, tokens, mode, calls, slots, e);
    c.mstress = true;
    c.skew = skew;
    add_unique(cases, c);
  };
  for (int w : dcp_sizes_for_world(opts.world)) {
    add(w, 64, ExecMode::kPipelined, 16, 2, true, EmptyPattern::kNone);
    add(w, g.max_tokens, ExecMode::kPipelined, 8, 2, true, EmptyPattern::kNone);
    add(w, 17, ExecMode::kEager, 16, 1, false, EmptyPattern::kOne);
    add(w, 1, ExecMode::kPipelined, 32, 1, false, EmptyPattern::kNone);
  }
  finish(cases, opts.base_seed);
  return cases;
}

// The input-reuse family (issue 15 item 7): the caller writes NaN over both
// inputs right after each call. Per group size, with skew (a late rank's
// combine can end while its own sends still read): eager on one and two slots
// (T = 1 and max_tokens), pipelined on two slots (max_tokens) and one (T = 17,
// an empty shard), and graph replays (T = 2 on two slots, max_tokens on one;
// a replay ends as a whole before the clobber, so these check the harness).
std::vector<Case> reuse_cases(const SuiteOptions& opts, const Geometry& g) {
  std::vector<Case> cases;
  auto add = [&](int w, int tokens, ExecMode mode, int calls, int slots, EmptyPattern e) {
    Case c = family_case(g, w, tokens, mode, calls, slots, e);
    c.reuse = true;
    c.skew = true;
    add_unique(cases, c);
  };
  for (int w : dcp_sizes_for_world(opts.world)) {
    add(w, 1, ExecMode::kEager, 2, 1, EmptyPattern::kNone);
    add(w, g.max_tokens, ExecMode::kEager, 4, 2, EmptyPattern::kNone);
    add(w, g.max_tokens, ExecMode::kPipelined, 4, 2, EmptyPattern::kNone);
    add(w, 17, ExecMode::kPipelined, 4, 1, EmptyPattern::kOne);
    add(w, 2, ExecMode::kGraph, 3, 2, EmptyPattern::kNone);
    add(w, g.max_tokens, ExecMode::kGraph, 3, 1, EmptyPattern::kNone);
  }
  finish(cases, opts.base_seed);
  return cases;
}

// The two-contexts family: per group size, two kernel contexts per rank with
// the ops alternating between them (plan.h): eager on one slot, pipelined
// with two layers on one slot and on two slots with an empty shard, and graph
// replays on two slots.
std::vector<Case> two_context_cases(const SuiteOptions& opts, const Geometry& g) {
  std::vector<Case> cases;
  auto add = [&](int w, int tokens, ExecMode mode, int calls, int slots, int layers,
                 EmptyPattern e) {
    Case c = family_case(g, w, tokens, mode, calls, slots, e);
    c.num_layers = layers;
    c.num_contexts = 2;
    cases.push_back(c);
  };
  for (int w : dcp_sizes_for_world(opts.world)) {
    add(w, 5, ExecMode::kEager, 4, 1, 1, EmptyPattern::kNone);
    add(w, 3, ExecMode::kPipelined, 4, 1, 2, EmptyPattern::kNone);
    add(w, 17, ExecMode::kPipelined, 6, 2, 1, EmptyPattern::kOne);
    add(w, 8, ExecMode::kGraph, 4, 2, 1, EmptyPattern::kNone);
  }
  finish(cases, opts.base_seed);
  return cases;
}

// The init-faults family (issue 15 item 4): per group size, a failed init
// (eager, then two slots pipelined on the fresh context) and an init
// `late_ms` late (pipelined on two slots, and graph replays).
std::vector<Case> init_fault_cases(const SuiteOptions& opts, const Geometry& g, int late_ms) {
  std::vector<Case> cases;
  auto add = [&](int w, InitFault f, int tokens, ExecMode mode, int calls, int slots) {
    Case c = family_case(g, w, tokens, mode, calls, slots, EmptyPattern::kNone);
    c.init_fault = f;
    c.init_late_ms = f == InitFault::kLate ? late_ms : 0;
    cases.push_back(c);
  };
  for (int w : dcp_sizes_for_world(opts.world)) {
    add(w, InitFault::kFail, 5, ExecMode::kEager, 2, 1);
    add(w, InitFault::kFail, 17, ExecMode::kPipelined, 4, 2);
    add(w, InitFault::kLate, 17, ExecMode::kPipelined, 4, 2);
    add(w, InitFault::kLate, 8, ExecMode::kGraph, 3, 1);
  }
  finish(cases, opts.base_seed);
  return cases;
}

// Every field-failure family's cases (cases/families.h), appended to a suite;
// the init-faults cases' late init is `init_late_ms` late.
void add_family_cases(std::vector<Case>& cases, const SuiteOptions& opts, const Geometry& g,
                      int init_late_ms) {
  for (const Case& k : capacity_cases(opts, g)) cases.push_back(k);
  for (const Case& p : producer_cases(opts, g)) cases.push_back(p);
  for (const Case& k : graph_set_cases(opts, g)) cases.push_back(k);
  for (const Case& k : pressure_cases(opts, g)) cases.push_back(k);
  for (const Case& k : reuse_cases(opts, g)) cases.push_back(k);
  for (const Case& k : two_context_cases(opts, g)) cases.push_back(k);
  for (const Case& k : init_fault_cases(opts, g, init_late_ms)) cases.push_back(k);
}

std::vector<Case> upstream_suite(const SuiteOptions& opts) {
  // The upstream test: Kimi-K3 geometry in 128-head storage, T in {1, 17}
  // contiguous and {5, 128} padded, no empty shard or one, 3 graph replays;
  // output dtype and base rotate so each appears with each layout.
  const Geometry g = *find_geometry("kimi-k3");
  const std::pair<int, Stride> layouts[] = {
      {1, Stride::kContig}, {17, Stride::kContig}, {5, Stride::kPadBoth}, {128, Stride::kPadBoth}};
  std::vector<Case> cases;
  for (int w : dcp_sizes_for_world(opts.world)) {
    int k = 0;
    for (const auto& [tokens, stride] : layouts) {
      for (EmptyPattern e : {EmptyPattern::kNone, EmptyPattern::kOne}) {
        Case c;
        c.dcp_size = w;
        c.geometry = g;
        c.out_dtype = k % 2 == 0 ? DType::kFp16 : DType::kBf16;
        c.lse_base = (k / 2) % 2 == 0 ? LseBase::kE : LseBase::k2;
        c.lse_dtype = DType::kFp32;
        c.num_tokens = std::min(tokens, g.max_tokens);
        set_stride(c, stride);
        c.empty = e;
        c.mode = ExecMode::kGraph;
        c.num_calls = 3;
        cases.push_back(c);
        ++k;
      }
    }
  }
  finish(cases, opts.base_seed);
  return cases;
}

std::vector<Case> default_suite(const SuiteOptions& opts, const Geometry& g) {
  const SuiteAxes ax({opts.world, g});
  const size_t dcp = ax.index_of("dcp");
  if (ax.size(dcp) == 0) return {};
  std::vector<Case> cases;
  // Every group size is its own code path (workspace, peers, concurrent
  // groups), so all pairs of the other axes are covered within each size:
  // strength 3 where one of the three is the dcp size. Only pairs the target
  // allows are to be covered, by rows it can run (suite_space.h). A fixed
  // structure seed: --seed changes the data, not which cases run.
  for (int w = 0; w < ax.size(dcp); ++w) {
    const AllowedSpace space(ax, g, w, opts.skip_reason);
    if (!space.group_reason().empty()) continue;  // the families' cases say why, by name
    const uint64_t seed = 0xDC9C5EED + static_cast<uint64_t>(w);
    for (const std::vector<int>& row :
         pairwise_rows(space.sizes(), seed, opts.skip_reason ? &space : nullptr)) {
      cases.push_back(space.make_case(row));
    }
  }
  finish(cases, opts.base_seed);
  const size_t num_rows = cases.size();
  for (const Case& u : upstream_suite(opts)) {
    if (std::find(cases.begin(), cases.end(), u) == cases.end()) cases.push_back(u);
  }
  add_family_cases(cases, opts, g, /*init_late_ms=*/100);  // in seconds of suite time
  adapt_to_target(cases, num_rows, opts);
  return cases;
}

std::vector<Case> full_suite(const SuiteOptions& opts, const Geometry& g) {
  const SuiteAxes ax({opts.world, g});
  if (ax.size(ax.index_of("dcp")) == 0) return {};
  std::vector<Case> cases;
  std::vector<int> row(ax.main.size(), 0);
  std::vector<int> picks(ax.secondary.size());
  while (true) {
    Case c;
    c.geometry = g;
    ax.apply(c, ax.main, row);
    for (size_t k = 0; k < picks.size(); ++k) {
      picks[k] = static_cast<int>(ax.axes[ax.secondary[k]]->full_pick(cases.size()));
    }
    ax.apply(c, ax.secondary, picks);
    cases.push_back(c);
    int k = static_cast<int>(row.size()) - 1;  // odometer over the product
    while (k >= 0 && ++row[k] == ax.size(ax.main[k])) row[k--] = 0;
    if (k < 0) break;
  }
  finish(cases, opts.base_seed);
  const size_t num_rows = cases.size();
  add_family_cases(cases, opts, g, /*init_late_ms=*/2000);  // seconds late, as in the field
  adapt_to_target(cases, num_rows, opts);
  return cases;
}

std::vector<Case> smoke_suite(const SuiteOptions& opts, const Geometry& g) {
  const std::vector<int> sizes = dcp_sizes_for_world(opts.world);
  if (sizes.empty()) return {};
  auto make = [&](int w, DType out, DType lse, LseBase base, int t, Stride s, EmptyPattern e,
                  int slots, ExecMode mode, int calls) {
    Case c;
    c.geometry = g;
    c.dcp_size = w;
    c.out_dtype = out;
    c.lse_dtype = lse;
    c.lse_base = base;
    c.num_tokens = std::clamp(t, 1, g.max_tokens);
    set_stride(c, s);
    c.empty = e;
    c.num_slots = slots;
    c.mode = mode;
    c.num_calls = calls;
    return c;
  };
  const int w = sizes.front();
  std::vector<Case> cases = {
      make(w, DType::kBf16, DType::kFp32, LseBase::k2, 1, Stride::kContig, EmptyPattern::kNone, 1,
           ExecMode::kEager, 2),
      make(w, DType::kFp16, DType::kFp32, LseBase::kE, 17, Stride::kPadBoth, EmptyPattern::kOne, 2,
           ExecMode::kGraph, 3),
      make(w, DType::kBf16, DType::kBf16, LseBase::kE, g.max_tokens, Stride::kPadOut,
           EmptyPattern::kRandom, 1, ExecMode::kPipelined, 4),
      make(w, DType::kFp16, DType::kFp16, LseBase::k2, 5, Stride::kPadLse, EmptyPattern::kAll, 2,
           ExecMode::kMixed, 6),
  };
  cases.back().special = SpecialLse::kNan;
  for (size_t i = 1; i < sizes.size(); ++i) {
    cases.push_back(make(sizes[i], DType::kBf16, DType::kFp32, LseBase::k2, 17, Stride::kContig,
                         EmptyPattern::kSpec, 2, ExecMode::kPipelined, 4));
  }
  finish(cases, opts.base_seed);
  return cases;
}

}  // namespace

const std::vector<std::string>& suite_names() {
  static const std::vector<std::string> names = {"smoke",    "default",  "full",
                                                 "upstream", "pressure", "memstress"};
  return names;
}

std::vector<int> dcp_sizes_for_world(int world) {
  std::vector<int> sizes;
  for (int w = world; w >= 2; --w) {
    if (world % w == 0) sizes.push_back(w);
  }
  return sizes;
}

std::vector<Case> build_suite(std::string_view suite, const SuiteOptions& opts) {
  const Geometry g = canonical_geometry(opts.geometry);
  if (suite == "default") return default_suite(opts, g);
  if (suite == "full") return full_suite(opts, g);
  std::vector<Case> cases;
  if (suite == "smoke") cases = smoke_suite(opts, g);
  if (suite == "upstream") cases = upstream_suite(opts);
  if (suite == "pressure") cases = pressure_cases(opts, g);
  if (suite == "memstress") cases = memstress_cases(opts, g);
  if (suite == "smoke" || suite == "upstream" || suite == "pressure" || suite == "memstress") {
    adapt_to_target(cases, 0, opts);
    return cases;
  }
  throw std::invalid_argument(
      fmt::format("unknown suite '{}' (expected smoke|default|full|upstream|pressure|memstress)",
                  suite));
}

}  // namespace dcp
