// Suites generated for a target (cases/suite_space.h, covering_array.h) over
// many random declarations and session facts, with the session's own skip
// rule: every allowed pair covered, the impossible ones exactly those an
// independent reading of the rules gives, no array case refused, refused
// family cases not adaptable, ids complete, sizes bounded.
#include "run_target.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "coverage.h"
#include "geometry.h"
#include "mix.h"
#include "suites.h"

namespace dcp {
namespace {

KernelInfo random_declaration(Rng& r) {
  KernelInfo k = default_kernel_info();
  k.name = "random";
  // Non-empty subsets: a kernel declares at least one of each.
  k.out_dtypes = static_cast<uint32_t>(r.between(1, 3)) << DCP_DTYPE_FP16;
  k.lse_dtypes = static_cast<uint32_t>(r.between(1, 7)) << DCP_DTYPE_FP16;
  k.lse_bases = static_cast<uint32_t>(r.between(1, 3)) << DCP_LSE_BASE_E;
  k.max_group_size = r.chance(0.5) ? 8 : r.between(2, 8);
  k.max_slots = r.between(1, 2);
  k.memory = r.chance(0.3) ? DCP_MEMORY_HOST : DCP_MEMORY_DEVICE;
  k.has_set_epoch = r.chance(0.7);
  for (uint64_t cap : {DCP_CAP_GRAPH_SAFE, DCP_CAP_MASKS_EMPTY_KV, DCP_CAP_NEEDS_CORESIDENT}) {
    k.capabilities = r.chance(0.5) ? k.capabilities | cap : k.capabilities & ~cap;
  }
  return k;
}

// The rules read independently of case_skip_reason: whether the value of
// suite axis `axis` that `c` holds cannot run, and whether slots x mode cannot.
bool value_impossible(const KernelInfo& k, std::string_view axis, const Case& c) {
  if (axis == "out") return !(k.out_dtypes & DCP_DTYPE_MASK(abi_dtype(c.out_dtype)));
  if (axis == "lse") return !(k.lse_dtypes & DCP_DTYPE_MASK(abi_dtype(c.lse_dtype)));
  if (axis == "base") {
    return !(k.lse_bases &
             DCP_LSE_BASE_MASK(c.lse_base == LseBase::kE ? DCP_LSE_BASE_E : DCP_LSE_BASE_2));
  }
  if (axis == "slots") return c.num_slots > k.max_slots;
  if (axis == "mode") {
    return uses_graphs(c.mode) && k.memory == DCP_MEMORY_DEVICE && !k.has(DCP_CAP_GRAPH_SAFE);
  }
  if (axis == "empty") return c.empty != EmptyPattern::kNone && !k.has(DCP_CAP_MASKS_EMPTY_KV);
  if (axis == "epoch") return c.epoch_start.has_value() && !k.has_set_epoch;
  return false;
}

// Impossible (group size, axis pair, value pair) triples by the rules above.
int expected_impossible(const RunTarget& t, const Geometry& g) {
  const KernelInfo& k = t.kernels.front();
  const SuiteAxes ax({t.world, g});
  const size_t dcp = ax.index_of("dcp");
  int n = 0;
  for (int w = 0; w < ax.size(dcp); ++w) {
    const AllowedSpace space(ax, g, w, nullptr);  // rows and cases only: no rule
    const std::vector<size_t>& others = space.others();
    const std::vector<int> sizes = space.sizes();
    const int num = static_cast<int>(sizes.size());
    for (int i = 0; i < num; ++i) {
      for (int j = i + 1; j < num; ++j) {
        for (int a = 0; a < sizes[i]; ++a) {
          for (int b = 0; b < sizes[j]; ++b) {
            std::vector<int> row(sizes.size(), 0);
            row[i] = a, row[j] = b;
            const Case c = space.make_case(row);
            const std::string_view ai = ax.axes[others[i]]->name, aj = ax.axes[others[j]]->name;
            const bool in_flight = c.num_slots == 2 && c.mode != ExecMode::kEager;
            const bool slots_mode = (ai == "slots" && aj == "mode") ||
                                    (ai == "mode" && aj == "slots");
            n += c.dcp_size > k.max_group_size || value_impossible(k, ai, c) ||
                 value_impossible(k, aj, c) ||
                 (slots_mode && in_flight && t.ranks_share_gpu &&
                  k.has(DCP_CAP_NEEDS_CORESIDENT));
          }
        }
      }
    }
  }
  return n;
}

bool adaptable(const Case& c, const RunTarget& t) {
  for (DType out : {DType::kFp16, DType::kBf16}) {
    for (DType lse : {DType::kFp32, DType::kFp16, DType::kBf16}) {
      for (LseBase base : {LseBase::kE, LseBase::k2}) {
        for (EmptyPattern e : {c.empty, EmptyPattern::kNone}) {
          Case a = c;
          a.out_dtype = out, a.lse_dtype = lse, a.lse_base = base, a.empty = e;
          if (run_skip_reason(t, a).empty()) return true;
        }
      }
    }
  }
  return false;
}

// Not a family's or the upstream test's (kimi-k3) case: a covering-array row.
bool array_row(const Case& c, const Geometry& g) {
  return c.geometry == g && !over_capacity(c) && c.producer == Producer::kDefault &&
         c.mode != ExecMode::kGraphSet && c.pressure == 0 && !c.reuse && c.num_contexts == 1 &&
         c.init_fault == InitFault::kNone;
}

TEST_CASE("the default target generates today's suites") {
  for (int world : {2, 4, 8}) {
    for (const char* geo : {"kimi", "tiny"}) {
      SuiteOptions opts{world, *find_geometry(geo), 3};
      const std::vector<Case> plain = build_suite("default", opts);
      RunTarget target;
      target.world = world;
      opts.skip_reason = skip_reason_fn(target);
      CHECK(build_suite("default", opts) == plain);
      const Coverage cov = suite_coverage(plain, opts);
      CHECK(cov.impossible == 0);
      CHECK(cov.covered == cov.allowed);
    }
  }
}

TEST_CASE("suites generated for random declarations cover every allowed pair and run") {
  Rng r(0xC0FE);
  const Geometry g = *find_geometry("tiny");
  for (int trial = 0; trial < 64; ++trial) {
    RunTarget t;
    t.kernels = {random_declaration(r)};
    t.world = r.chance(0.5) ? 2 : 4;
    t.ranks_share_gpu = r.chance(0.5);
    t.host_backend = r.chance(0.3);
    CAPTURE(trial);
    CAPTURE(t.world);
    CAPTURE(capability_list(t.kernels.front().capabilities));
    SuiteOptions opts{t.world, g, 0};
    const size_t unconstrained = build_suite("default", opts).size();
    opts.skip_reason = skip_reason_fn(t);
    const std::vector<Case> cases = build_suite("default", opts);
    const Coverage cov = suite_coverage(cases, opts);
    CHECK(cov.covered == cov.allowed);
    CHECK(cov.impossible == expected_impossible(t, g));
    if (cov.impossible != expected_impossible(t, g)) MESSAGE(coverage_text(cov));
    CHECK(cases.size() <= unconstrained * 3 / 2);
    int skipped = 0;
    for (const Case& c : cases) {
      std::string error;
      const auto back = parse_case_id(format_case_id(c), &error);
      REQUIRE(back.has_value());
      CHECK(*back == c);
      const std::string why = run_skip_reason(t, c);
      if (why.empty()) continue;
      ++skipped;
      CAPTURE(format_case_id(c));
      CAPTURE(why);
      CHECK_FALSE(array_row(c, g));  // rows are runnable by construction
      CHECK_FALSE(adaptable(c, t));  // a family case that no allowed value makes run
    }
    MESSAGE("trial " << trial << ": " << cases.size() << " cases (" << unconstrained
                     << " unconstrained), " << skipped << " skipped, " << cov.total_line());
  }
}

}  // namespace
}  // namespace dcp
