// Suites. `default` is a greedy pairwise covering array, built once per DCP
// group size, over the main axes and the secondary ones (every pair of values
// of any two axes appears with every group size), plus the upstream test's
// own cases. `full` is the product of the main axes, secondary axes cycled.
#include "suites.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "geometry.h"
#include "mix.h"

namespace dcp {
namespace {

// Main axes first; the secondary ones (special values, skew, layers, epoch
// near wrap) join the covering array of `default` too, so e.g. an epoch wrap
// meets every mode and slot count.
enum Axis {
  kAxDcp,
  kAxOut,
  kAxLse,
  kAxBase,
  kAxTokens,
  kAxStride,
  kAxEmpty,
  kAxMode,
  kAxSlots,
  kNumMainAxes,
  kAxSpecial = kNumMainAxes,
  kAxSkew,
  kAxLayers,
  kAxEpoch,
  kNumAxes
};
enum class Stride { kContig, kPadOut, kPadLse, kPadBoth };

constexpr DType kOut[] = {DType::kFp16, DType::kBf16};
constexpr DType kLse[] = {DType::kFp32, DType::kFp16, DType::kBf16};
constexpr LseBase kBase[] = {LseBase::kE, LseBase::k2};
constexpr Stride kStrides[] = {Stride::kContig, Stride::kPadOut, Stride::kPadLse, Stride::kPadBoth};
constexpr EmptyPattern kEmpty[] = {EmptyPattern::kNone, EmptyPattern::kOne, EmptyPattern::kAll,
                                   EmptyPattern::kRandom, EmptyPattern::kSpec};
// Call counts per mode: >= 2 so two slots can alternate; pipelining 4 deep
// reuses each parity twice without a host sync; 3 graph replays as upstream.
constexpr std::pair<ExecMode, int> kModes[] = {
    {ExecMode::kEager, 2}, {ExecMode::kGraph, 3}, {ExecMode::kPipelined, 4}, {ExecMode::kMixed, 6}};
constexpr int kSlots[] = {1, 2};
constexpr SpecialLse kSpecials[] = {SpecialLse::kNone,   SpecialLse::kEqual,  SpecialLse::kHugeGap,
                                    SpecialLse::kPosInf, SpecialLse::kNegInf, SpecialLse::kNan};
constexpr int kLayers[] = {1, 3};

struct Axes {
  std::vector<int> dcp_sizes;
  std::vector<int> token_counts;
  // Values per axis, in Axis order; `with_secondary` adds the secondary axes.
  std::vector<int> sizes(bool with_secondary) const {
    auto n = [](const auto& values) { return static_cast<int>(std::size(values)); };
    std::vector<int> s = {static_cast<int>(dcp_sizes.size()),
                          n(kOut),
                          n(kLse),
                          n(kBase),
                          static_cast<int>(token_counts.size()),
                          n(kStrides),
                          n(kEmpty),
                          n(kModes),
                          n(kSlots)};
    if (with_secondary) s.insert(s.end(), {n(kSpecials), 2, n(kLayers), 2});  // skew, epoch: 2
    return s;
  }
};

std::vector<int> token_counts_for(int max_tokens) {
  std::vector<int> t;
  for (int v : {1, 3, 5, 8, 17, 64, 100, max_tokens}) {
    const int clamped = std::clamp(v, 1, std::max(1, max_tokens));
    if (std::find(t.begin(), t.end(), clamped) == t.end()) t.push_back(clamped);
  }
  return t;
}

// An overridden preset is written (and parsed back) as a custom geometry.
Geometry canonical_geometry(const Geometry& g) {
  const auto preset = g.name.empty() ? std::nullopt : find_geometry(g.name);
  if (preset && *preset == g) return g;
  return custom_geometry(g.heads_per_rank, g.head_dim, g.max_tokens, g.storage_heads);
}

// Padding: the padded backing storage when the geometry has one (as upstream:
// a 128-head buffer viewed as W*H heads), else a small multiple of 8 for the
// output and an odd pad for the LSE.
void set_stride(Case& c, Stride s) {
  const Geometry& g = c.geometry;
  const int spare_heads = g.storage_heads - c.dcp_size * g.heads_per_rank;
  const int out_pad = g.storage_heads > 0 && spare_heads > 0 ? spare_heads * g.head_dim : 64;
  const int lse_pad = g.storage_heads > 0 && spare_heads > 0 ? spare_heads : 3;
  c.out_pad_elems = (s == Stride::kPadOut || s == Stride::kPadBoth) ? out_pad : 0;
  c.lse_pad_elems = (s == Stride::kPadLse || s == Stride::kPadBoth) ? lse_pad : 0;
}

void set_seed(Case& c, uint64_t base_seed) {
  c.seed = 0;
  std::string id = format_case_id(c);
  id.resize(id.rfind("-s"));  // the id without its seed
  c.seed = mix64(fnv1a(id) ^ mix64(base_seed + kGolden)) & 0xFFFFFF;
}

void set_epoch_near_wrap(Case& c);

Case make_case(const Geometry& g, const Axes& ax, const std::vector<int>& row) {
  Case c;
  c.geometry = g;
  c.dcp_size = ax.dcp_sizes[static_cast<size_t>(row[kAxDcp])];
  c.out_dtype = kOut[row[kAxOut]];
  c.lse_dtype = kLse[row[kAxLse]];
  c.lse_base = kBase[row[kAxBase]];
  c.num_tokens = ax.token_counts[static_cast<size_t>(row[kAxTokens])];
  set_stride(c, kStrides[row[kAxStride]]);
  c.empty = kEmpty[row[kAxEmpty]];
  c.mode = kModes[row[kAxMode]].first;
  c.num_calls = kModes[row[kAxMode]].second;
  c.num_slots = kSlots[row[kAxSlots]];
  if (row.size() == kNumAxes) {
    c.special = kSpecials[row[kAxSpecial]];
    c.skew = row[kAxSkew] == 1;
    c.num_layers = kLayers[row[kAxLayers]];
    if (row[kAxEpoch] == 1) set_epoch_near_wrap(c);
  }
  return c;
}

// Starts the epoch so that it wraps to 0 on every used slot during the case:
// 2^32 - 3 (wrap at the third op, with ops on both sides of it) when every
// used slot surely gets >= 3 ops, else earlier. With two slots the split of
// calls depends on the seed (which depends on the id), so only a call's own
// layers are sure.
void set_epoch_near_wrap(Case& c) {
  const int sure_ops = c.num_slots == 1 ? c.num_calls * c.num_layers : c.num_layers;
  const int k = std::clamp(sure_ops, 1, 3);
  c.epoch_start = 0xFFFFFFFFu - static_cast<uint32_t>(k - 1);
}

// For `full` (main axes only): secondary axes cycle over the rows with
// coprime periods, so each value appears and meets many combinations.
void apply_secondary(Case& c, size_t index) {
  c.special = kSpecials[index % 6];
  c.skew = index % 7 == 1;
  if (index % 5 == 2) c.num_layers = 3;
  if (index % 11 == 3) set_epoch_near_wrap(c);
}

// Greedy pairwise covering array (AETG-style): each new row starts from an
// uncovered pair and fills the other axes with the value covering the most
// uncovered pairs; the best of several candidate rows is kept.
std::vector<std::vector<int>> pairwise_rows(const std::vector<int>& sizes, uint64_t seed) {
  const int n = static_cast<int>(sizes.size());
  // uncovered[i][j][a * sizes[j] + b] for i < j.
  std::vector<std::vector<std::vector<char>>> uncovered(static_cast<size_t>(n));
  int remaining = 0;
  for (int i = 0; i < n; ++i) {
    uncovered[i].resize(static_cast<size_t>(n));
    for (int j = i + 1; j < n; ++j) {
      uncovered[i][j].assign(static_cast<size_t>(sizes[i] * sizes[j]), 1);
      remaining += sizes[i] * sizes[j];
    }
  }
  auto is_new = [&](int i, int a, int j, int b) {
    if (i > j) std::swap(i, j), std::swap(a, b);
    return uncovered[i][j][static_cast<size_t>(a * sizes[j] + b)] != 0;
  };
  Rng rng(seed);
  std::vector<std::vector<int>> rows;
  while (remaining > 0) {
    std::vector<int> best;
    int best_gain = -1;
    struct Pair {
      int i, j, k;
    };
    std::vector<Pair> open;
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) {
        for (int k = 0; k < sizes[i] * sizes[j]; ++k) {
          if (uncovered[i][j][static_cast<size_t>(k)]) open.push_back({i, j, k});
        }
      }
    }
    for (int trial = 0; trial < 24; ++trial) {
      // Seed the row with a random uncovered pair.
      const Pair p = open[static_cast<size_t>(rng.below(static_cast<int>(open.size())))];
      std::vector<int> row(static_cast<size_t>(n), -1);
      row[p.i] = p.k / sizes[p.j];
      row[p.j] = p.k % sizes[p.j];
      std::vector<int> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      for (int k = n - 1; k > 0; --k) std::swap(order[k], order[rng.below(k + 1)]);
      int gain = 0;
      for (int ax : order) {
        if (row[ax] >= 0) continue;
        int best_v = 0, best_g = -1;
        for (int v = 0; v < sizes[ax]; ++v) {
          int g = 0;
          for (int o = 0; o < n; ++o) {
            if (o != ax && row[o] >= 0 && is_new(ax, v, o, row[o])) ++g;
          }
          if (g > best_g || (g == best_g && rng.chance(0.5))) best_g = g, best_v = v;
        }
        row[ax] = best_v;
      }
      for (int i = 0; i < n; ++i) {
        for (int j = i + 1; j < n; ++j) gain += is_new(i, row[i], j, row[j]) ? 1 : 0;
      }
      if (gain > best_gain) best_gain = gain, best = row;
    }
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) {
        char& u = uncovered[i][j][static_cast<size_t>(best[i] * sizes[j] + best[j])];
        remaining -= u;
        u = 0;
      }
    }
    rows.push_back(best);
  }
  return rows;
}

void finish(std::vector<Case>& cases, uint64_t base_seed) {
  for (Case& c : cases) set_seed(c, base_seed);
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
        c.out_dtype = kOut[k % 2];
        c.lse_base = kBase[(k / 2) % 2];
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
  const Axes ax{dcp_sizes_for_world(opts.world), token_counts_for(g.max_tokens)};
  if (ax.dcp_sizes.empty()) return {};
  std::vector<Case> cases;
  // Every group size is its own code path (workspace, peers, concurrent
  // groups), so all pairs of the other axes are covered within each size:
  // strength 3 where one of the three is the dcp size. A fixed structure
  // seed: --seed changes the data, not which cases run.
  std::vector<int> sizes = ax.sizes(true);
  sizes.erase(sizes.begin() + kAxDcp);
  for (size_t w = 0; w < ax.dcp_sizes.size(); ++w) {
    for (std::vector<int> row : pairwise_rows(sizes, 0xDC9C5EED + w)) {
      row.insert(row.begin() + kAxDcp, static_cast<int>(w));
      cases.push_back(make_case(g, ax, row));
    }
  }
  finish(cases, opts.base_seed);
  for (const Case& u : upstream_suite(opts)) {
    if (std::find(cases.begin(), cases.end(), u) == cases.end()) cases.push_back(u);
  }
  return cases;
}

std::vector<Case> full_suite(const SuiteOptions& opts, const Geometry& g) {
  const Axes ax{dcp_sizes_for_world(opts.world), token_counts_for(g.max_tokens)};
  if (ax.dcp_sizes.empty()) return {};
  const std::vector<int> sizes = ax.sizes(false);
  std::vector<Case> cases;
  std::vector<int> row(kNumMainAxes, 0);
  while (true) {
    Case c = make_case(g, ax, row);
    apply_secondary(c, cases.size());
    cases.push_back(c);
    int k = kNumMainAxes - 1;  // odometer over the product
    while (k >= 0 && ++row[k] == sizes[k]) row[k--] = 0;
    if (k < 0) break;
  }
  finish(cases, opts.base_seed);
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
  static const std::vector<std::string> names = {"smoke", "default", "full", "upstream"};
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
  if (suite == "smoke") return smoke_suite(opts, g);
  if (suite == "default") return default_suite(opts, g);
  if (suite == "full") return full_suite(opts, g);
  if (suite == "upstream") return upstream_suite(opts);
  throw std::invalid_argument(
      fmt::format("unknown suite '{}' (expected smoke|default|full|upstream)", suite));
}

}  // namespace dcp
