// The axis table. Each entry is one axis; helpers below keep the common shapes
// (an enum token with a prefix, a number, a value reset to its default) short.
#include "axes.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <type_traits>

#include "geometry.h"
#include "suites.h"

namespace dcp {
namespace {

using nlohmann::json;

constexpr DType kOutDTypes[] = {DType::kFp16, DType::kBf16};
constexpr DType kLseDTypes[] = {DType::kFp32, DType::kFp16, DType::kBf16};
constexpr LseBase kBases[] = {LseBase::kE, LseBase::k2};
constexpr EmptyPattern kEmpties[] = {EmptyPattern::kNone, EmptyPattern::kOne, EmptyPattern::kAll,
                                     EmptyPattern::kRandom, EmptyPattern::kSpec};
constexpr SpecialLse kSpecials[] = {SpecialLse::kNone,   SpecialLse::kEqual,  SpecialLse::kHugeGap,
                                    SpecialLse::kPosInf, SpecialLse::kNegInf, SpecialLse::kNan};
constexpr ExecMode kModes[] = {ExecMode::kEager, ExecMode::kGraph, ExecMode::kPipelined,
                               ExecMode::kMixed, ExecMode::kGraphSet};
constexpr Producer kProducers[] = {Producer::kDefault, Producer::kSlow, Producer::kSlowPdl};
constexpr InitFault kInitFaults[] = {InitFault::kNone, InitFault::kFail, InitFault::kLate};

// ---- id tokens ----

// Canonical non-negative decimal: digits only, no sign, no leading zeros.
std::optional<int> parse_uint(std::string_view s) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::optional<uint64_t> parse_hex(std::string_view s) {
  if (s.empty() || s.size() > 16) return std::nullopt;
  for (char ch : s) {
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return std::nullopt;
  }
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v, 16);
  return v;
}

// Parses "<prefix><uint>"; nullopt when the prefix or the number is wrong.
std::optional<int> prefixed_uint(std::string_view tok, std::string_view prefix) {
  if (!tok.starts_with(prefix)) return std::nullopt;
  return parse_uint(tok.substr(prefix.size()));
}

std::string bad(std::string_view tok, std::string_view expected) {
  if (tok.empty()) return fmt::format("missing token (expected {})", expected);
  return fmt::format("bad token '{}' (expected {})", tok, expected);
}

template <typename E, size_t N>
std::optional<E> lookup(std::string_view name, const E (&values)[N]) {
  for (E v : values) {
    if (to_string(v) == name) return v;
  }
  return std::nullopt;
}

template <typename E, size_t N>
std::string choices(const E (&values)[N], std::string_view prefix) {
  std::string s;
  for (E v : values) s += fmt::format("{}{}{}", s.empty() ? "" : "|", prefix, to_string(v));
  return s;
}

// A required "<prefix><enum name>" token.
template <auto M, typename E, size_t N>
std::string read_enum(IdTokens& t, Case& c, std::string_view prefix, const E (&values)[N]) {
  const std::string_view tok = t.peek();
  const auto v = tok.starts_with(prefix) ? lookup(tok.substr(prefix.size()), values) : std::nullopt;
  if (!v) return bad(tok, choices(values, prefix));
  c.*M = *v;
  t.next();
  return "";
}

// A required "<prefix><uint>" token.
template <auto M>
std::string read_uint(IdTokens& t, Case& c, std::string_view prefix, std::string_view expected) {
  const auto v = prefixed_uint(t.peek(), prefix);
  if (!v) return bad(t.peek(), expected);
  c.*M = *v;
  t.next();
  return "";
}

// Geometry as written in an id: the preset name only when the geometry is
// exactly that preset, otherwise the custom form, so overrides are never lost.
std::string geometry_token(const Geometry& g) {
  if (!g.name.empty()) {
    const auto preset = find_geometry(g.name);
    if (preset && *preset == g) return g.name;
  }
  std::string s = fmt::format("h{}d{}m{}", g.heads_per_rank, g.head_dim, g.max_tokens);
  if (g.storage_heads > 0) s += fmt::format("p{}", g.storage_heads);
  return s;
}

std::optional<Geometry> parse_custom_geometry(std::string_view tok) {
  // h<H>d<D>m<maxT>[p<storage>]
  auto take = [&tok](char key) -> std::optional<int> {
    if (tok.empty() || tok[0] != key) return std::nullopt;
    size_t end = 1;
    while (end < tok.size() && tok[end] >= '0' && tok[end] <= '9') ++end;
    const auto v = parse_uint(tok.substr(1, end - 1));
    tok.remove_prefix(end);
    return v;
  };
  const auto h = take('h');
  const auto d = take('d');
  const auto m = take('m');
  if (!h || !d || !m) return std::nullopt;
  int p = 0;
  if (!tok.empty()) {
    const auto pv = take('p');
    if (!pv || !tok.empty()) return std::nullopt;
    p = *pv;
  }
  return custom_geometry(*h, *d, *m, p);
}

std::string read_geometry(IdTokens& t, Case& c) {
  // Preset names may contain '-': try the longest first.
  std::vector<Geometry> presets = geometry_presets();
  std::sort(presets.begin(), presets.end(),
            [](const Geometry& a, const Geometry& b) { return a.name.size() > b.name.size(); });
  for (const Geometry& g : presets) {
    if (t.matches(g.name)) {
      c.geometry = g;
      t.next(static_cast<size_t>(std::count(g.name.begin(), g.name.end(), '-')) + 1);
      return "";
    }
  }
  const auto g = parse_custom_geometry(t.peek());
  if (!g) return bad(t.peek(), "a geometry preset or h<H>d<D>m<maxT>[p<storage>]");
  c.geometry = *g;
  t.next();
  return "";
}

std::string read_stride(IdTokens& t, Case& c) {
  if (t.peek() == "contig") {
    t.next();
    return "";
  }
  const std::string_view pad = t.peek();
  const size_t x = pad.find('x');
  const auto o = pad.starts_with("pad") && x != std::string_view::npos
                     ? parse_uint(pad.substr(3, x - 3))
                     : std::nullopt;
  const auto l = o ? parse_uint(pad.substr(x + 1)) : std::nullopt;
  if (!o || !l || (*o == 0 && *l == 0)) return bad(pad, "contig|pad<out>x<lse>");
  c.out_pad_elems = *o;
  c.lse_pad_elems = *l;
  t.next();
  return "";
}

std::string read_mode(IdTokens& t, Case& c) {
  for (ExecMode m : kModes) {
    if (auto v = prefixed_uint(t.peek(), to_string(m))) {
      c.mode = m;
      c.num_calls = *v;
      t.next();
      return "";
    }
  }
  return bad(t.peek(), "eager<N>|graph<N>|pipe<N>|mix<N>|graphs<N>");
}

// ---- suites ----

// Edits setting member M to each of `values`.
template <auto M, typename V>
std::vector<CaseEdit> set_each(const std::vector<V>& values) {
  std::vector<CaseEdit> edits;
  for (V v : values) edits.push_back([v](Case& c) { c.*M = v; });
  return edits;
}

std::vector<int> token_counts_for(int max_tokens) {
  std::vector<int> t;
  for (int v : {1, 3, 5, 8, 17, 64, 100, max_tokens}) {
    const int clamped = std::clamp(v, 1, std::max(1, max_tokens));
    if (std::find(t.begin(), t.end(), clamped) == t.end()) t.push_back(clamped);
  }
  return t;
}

// Starts the epoch `k` below `limit` (2^31 or 2^32) so that every used slot
// crosses it during the case, with ops on both sides: k = 3 when every used
// slot surely gets >= 3 ops, else fewer. With two slots the split of calls
// depends on the seed (which depends on the id), so only a call's own layers
// are sure. Needs slots, calls and layers set. 2^31 is where a signed 32-bit
// epoch overflows (and an ordered compare of u32 flags as int32 flips);
// 2^32 is where a u32 epoch wraps to 0 (and a u64 one leaves its low word).
void set_epoch_below(Case& c, uint64_t limit) {
  const int sure_ops = c.num_slots == 1 ? c.num_calls * c.num_layers : c.num_layers;
  const int k = std::clamp(sure_ops, 1, 3);
  c.epoch_start = static_cast<uint32_t>(limit - static_cast<uint64_t>(k));
}

// "near-2^31", "near-2^32" (within 4 below either), "fresh" (none) or "set".
std::string epoch_label(const Case& c) {
  if (!c.epoch_start) return "fresh";
  if (epoch_starts_below(c, kEpochSignBit)) return "near-2^31";
  if (epoch_starts_below(c, kEpochWrap)) return "near-2^32";
  return "set";
}

// ---- shrinking and JSON ----

// A shrink step to the default value of member M, and its measure (0 or 1).
template <auto M>
void shrink_to_default(const Case& c, std::vector<Case>& out) {
  if (c.*M != Case{}.*M) {
    Case k = c;
    k.*M = Case{}.*M;
    out.push_back(k);
  }
}
template <auto M>
int64_t off_default(const Case& c) {
  return c.*M != Case{}.*M ? 1 : 0;
}

// A count toward 1: halve first (big steps), then one less.
template <auto M>
void shrink_count(const Case& c, std::vector<Case>& out) {
  const int n = c.*M;
  if (n <= 1) return;
  Case k = c;
  k.*M = n / 2;
  out.push_back(k);
  if (n - 1 != n / 2) {
    k.*M = n - 1;
    out.push_back(k);
  }
}

template <auto M>
int64_t value_of(const Case& c) {
  return c.*M;
}

// JSON field `key` holding member M as-is (numbers, bools).
template <auto M>
auto json_put(std::string_view key) {
  return [key](const Case& c, json& j) { j[std::string(key)] = c.*M; };
}
template <auto M>
auto json_get(std::string_view key) {
  return [key](const json& j, Case& c) { j.at(std::string(key)).get_to(c.*M); };
}
// JSON field `key` holding enum member M by its id name.
template <auto M>
auto json_put_name(std::string_view key) {
  return [key](const Case& c, json& j) { j[std::string(key)] = std::string(to_string(c.*M)); };
}
template <auto M, typename E, size_t N>
auto json_get_name(std::string_view key, const E (&values)[N]) {
  return [key, &values](const json& j, Case& c) {
    const std::string name = j.at(std::string(key)).get<std::string>();
    const auto v = lookup(name, values);
    if (!v) throw std::invalid_argument(fmt::format("bad {} '{}'", key, name));
    c.*M = *v;
  };
}

template <typename V>
std::string str(V v) {
  if constexpr (std::is_arithmetic_v<V>) {
    return std::to_string(v);
  } else {
    return std::string(to_string(v));
  }
}
template <auto M>
std::string label_of(const Case& c) {
  return str(c.*M);
}

std::string stride_label(const Case& c) {
  if (c.out_pad_elems == 0 && c.lse_pad_elems == 0) return "contig";
  if (c.lse_pad_elems == 0) return "padded-out";
  if (c.out_pad_elems == 0) return "padded-lse";
  return "padded-both";
}

std::vector<AxisDesc> make_table() {
  return {
      {.name = "dcp",
       .token = [](const Case& c) { return fmt::format("dcp{}", c.dcp_size); },
       .read = [](IdTokens& t, Case& c) {
         return read_uint<&Case::dcp_size>(t, c, "dcp", "dcp<size>");
       },
       .suite_values = [](const SuiteContext& s) {
         return set_each<&Case::dcp_size>(dcp_sizes_for_world(s.world));
       },
       .draw = [](Rng& r, Case& c, const RandomContext& x) {
         c.dcp_size = x.dcp_sizes[static_cast<size_t>(r.below(static_cast<int>(x.dcp_sizes.size())))];
       },
       // Smaller group: the largest proper divisor >= 2 (it still divides the world).
       .shrink = [](const Case& c, std::vector<Case>& out) {
         for (int p = 2; p * p <= c.dcp_size || p == c.dcp_size; ++p) {
           if (c.dcp_size % p != 0) continue;
           if (c.dcp_size / p >= 2) {
             out.push_back(c);
             out.back().dcp_size /= p;
           }
           break;
         }
       },
       .measure = value_of<&Case::dcp_size>,
       .to_json = json_put<&Case::dcp_size>("dcp_size"),
       .from_json = json_get<&Case::dcp_size>("dcp_size"),
       .label = label_of<&Case::dcp_size>},
      {.name = "geometry",
       .token = [](const Case& c) { return geometry_token(c.geometry); },
       .read = read_geometry,
       .to_json = [](const Case& c, json& j) { j["geometry"] = geometry_json(c.geometry); },
       .from_json = [](const json& j, Case& c) {
         c.geometry = canonical_geometry(geometry_from_json(j.at("geometry")));
       },
       .label = [](const Case& c) {
         return c.geometry.name.empty() ? std::string("custom") : c.geometry.name;
       }},
      {.name = "out",
       .token = [](const Case& c) { return str(c.out_dtype); },
       .read = [](IdTokens& t, Case& c) {
         return read_enum<&Case::out_dtype>(t, c, "", kOutDTypes);
       },
       .suite_values = [](const SuiteContext&) {
         return set_each<&Case::out_dtype>(std::vector(std::begin(kOutDTypes), std::end(kOutDTypes)));
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         c.out_dtype = r.chance(0.5) ? DType::kFp16 : DType::kBf16;
       },
       .to_json = json_put_name<&Case::out_dtype>("out_dtype"),
       .from_json = json_get_name<&Case::out_dtype>("out_dtype", kOutDTypes),
       .label = label_of<&Case::out_dtype>},
      {.name = "lse",
       .token = [](const Case& c) { return "lse" + str(c.lse_dtype); },
       .read = [](IdTokens& t, Case& c) {
         return read_enum<&Case::lse_dtype>(t, c, "lse", kLseDTypes);
       },
       .suite_values = [](const SuiteContext&) {
         return set_each<&Case::lse_dtype>(std::vector(std::begin(kLseDTypes), std::end(kLseDTypes)));
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) { c.lse_dtype = kLseDTypes[r.below(3)]; },
       .to_json = json_put_name<&Case::lse_dtype>("lse_dtype"),
       .from_json = json_get_name<&Case::lse_dtype>("lse_dtype", kLseDTypes),
       .label = label_of<&Case::lse_dtype>},
      {.name = "base",
       .token = [](const Case& c) { return "base" + str(c.lse_base); },
       .read = [](IdTokens& t, Case& c) {
         return read_enum<&Case::lse_base>(t, c, "base", kBases);
       },
       .suite_values = [](const SuiteContext&) {
         return set_each<&Case::lse_base>(std::vector(std::begin(kBases), std::end(kBases)));
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         c.lse_base = r.chance(0.5) ? LseBase::kE : LseBase::k2;
       },
       .to_json = json_put_name<&Case::lse_base>("lse_base"),
       .from_json = json_get_name<&Case::lse_base>("lse_base", kBases),
       .label = label_of<&Case::lse_base>},
      {.name = "tokens",
       .token = [](const Case& c) { return fmt::format("t{}", c.num_tokens); },
       .read = [](IdTokens& t, Case& c) {
         return read_uint<&Case::num_tokens>(t, c, "t", "t<tokens>");
       },
       .suite_values = [](const SuiteContext& s) {
         return set_each<&Case::num_tokens>(token_counts_for(s.geometry.max_tokens));
       },
       // Uniform, small, the full workspace, or (rarely) one over it.
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         const int max = c.geometry.max_tokens;
         const int shape = r.below(4);
         c.num_tokens = shape == 0 ? std::min(max, r.between(1, 8))
                        : shape == 1 ? max
                                     : r.between(1, max);
         if (r.chance(0.02)) c.num_tokens = max + 1;
       },
       .shrink = shrink_count<&Case::num_tokens>,
       .measure = value_of<&Case::num_tokens>,
       .to_json = json_put<&Case::num_tokens>("num_tokens"),
       .from_json = json_get<&Case::num_tokens>("num_tokens"),
       .label = label_of<&Case::num_tokens>},
      {.name = "stride",
       .token = [](const Case& c) {
         return c.out_pad_elems == 0 && c.lse_pad_elems == 0
                    ? std::string("contig")
                    : fmt::format("pad{}x{}", c.out_pad_elems, c.lse_pad_elems);
       },
       .read = read_stride,
       .suite_values = [](const SuiteContext&) {
         std::vector<CaseEdit> edits;
         for (Stride s : {Stride::kContig, Stride::kPadOut, Stride::kPadLse, Stride::kPadBoth}) {
           edits.push_back([s](Case& c) { set_stride(c, s); });
         }
         return edits;
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         const Geometry& g = c.geometry;
         const int spare_heads = g.storage_heads - c.dcp_size * g.heads_per_rank;
         if (r.chance(0.5)) {
           c.out_pad_elems = spare_heads > 0 && g.storage_heads > 0 && r.chance(0.5)
                                 ? spare_heads * g.head_dim
                                 : 8 * r.between(1, 16);
         }
         if (r.chance(0.5)) c.lse_pad_elems = r.between(1, 40);
       },
       .shrink = [](const Case& c, std::vector<Case>& out) {
         Case k = c;
         if (c.out_pad_elems > 0 && c.lse_pad_elems > 0) {
           k.out_pad_elems = k.lse_pad_elems = 0;
           out.push_back(k);
         }
         if (c.out_pad_elems > 0) out.push_back(c), out.back().out_pad_elems = 0;
         if (c.lse_pad_elems > 0) out.push_back(c), out.back().lse_pad_elems = 0;
       },
       .measure = [](const Case& c) {
         return int64_t{c.out_pad_elems > 0} + int64_t{c.lse_pad_elems > 0};
       },
       .to_json = [](const Case& c, json& j) {
         j["out_pad_elems"] = c.out_pad_elems;
         j["lse_pad_elems"] = c.lse_pad_elems;
         j["out_token_stride"] = c.out_token_stride();  // derived, for readers
         j["lse_token_stride"] = c.lse_token_stride();
       },
       .from_json = [](const json& j, Case& c) {
         j.at("out_pad_elems").get_to(c.out_pad_elems);
         j.at("lse_pad_elems").get_to(c.lse_pad_elems);
       },
       .label = stride_label},
      {.name = "empty",
       .token = [](const Case& c) { return "empty" + str(c.empty); },
       .read = [](IdTokens& t, Case& c) {
         return read_enum<&Case::empty>(t, c, "empty", kEmpties);
       },
       .suite_values = [](const SuiteContext&) {
         return set_each<&Case::empty>(std::vector(std::begin(kEmpties), std::end(kEmpties)));
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         c.empty = static_cast<EmptyPattern>(r.below(5));
       },
       .shrink = shrink_to_default<&Case::empty>,
       .measure = off_default<&Case::empty>,
       .to_json = json_put_name<&Case::empty>("empty"),
       .from_json = json_get_name<&Case::empty>("empty", kEmpties),
       .label = label_of<&Case::empty>},
      {.name = "special",
       .token = [](const Case& c) {
         return c.special == SpecialLse::kNone ? std::string() : "special" + str(c.special);
       },
       .read = [](IdTokens& t, Case& c) {
         if (!t.peek().starts_with("special")) return std::string();
         const auto v = lookup(t.peek().substr(7), kSpecials);
         if (!v || *v == SpecialLse::kNone) return bad(t.peek(), choices(kSpecials, "special"));
         c.special = *v;
         t.next();
         return std::string();
       },
       .suite_values = [](const SuiteContext&) {
         return set_each<&Case::special>(std::vector(std::begin(kSpecials), std::end(kSpecials)));
       },
       .full_pick = [](size_t row) { return row % 6; },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         if (r.chance(0.5)) c.special = static_cast<SpecialLse>(r.between(1, 5));
       },
       .shrink = shrink_to_default<&Case::special>,
       .measure = off_default<&Case::special>,
       .to_json = json_put_name<&Case::special>("special"),
       .from_json = json_get_name<&Case::special>("special", kSpecials),
       .label = label_of<&Case::special>},
      {.name = "slots",
       .token = [](const Case& c) { return fmt::format("ub{}", c.num_slots); },
       .read = [](IdTokens& t, Case& c) {
         return read_uint<&Case::num_slots>(t, c, "ub", "ub<slots>");
       },
       .suite_values = [](const SuiteContext&) { return set_each<&Case::num_slots>(std::vector{1, 2}); },
       .draw = [](Rng& r, Case& c, const RandomContext&) {  // after mode: needs num_calls
         if (c.num_calls >= 2 && r.chance(0.5)) c.num_slots = 2;
       },
       .shrink = shrink_to_default<&Case::num_slots>,
       .measure = value_of<&Case::num_slots>,
       .to_json = json_put<&Case::num_slots>("num_slots"),
       .from_json = json_get<&Case::num_slots>("num_slots"),
       .label = label_of<&Case::num_slots>},
      // The mode's token and draws carry its call count (the count's range
      // depends on the mode); "calls" below shrinks and groups the count.
      {.name = "mode",
       .token = [](const Case& c) { return fmt::format("{}{}", to_string(c.mode), c.num_calls); },
       .read = read_mode,
       // Call counts per mode: >= 2 so two slots can alternate; pipelining 4 deep
       // reuses each parity twice without a host sync; 3 graph replays as upstream.
       .suite_values = [](const SuiteContext&) {
         std::vector<CaseEdit> edits;
         for (auto [m, n] : {std::pair{ExecMode::kEager, 2}, std::pair{ExecMode::kGraph, 3},
                             std::pair{ExecMode::kPipelined, 4}, std::pair{ExecMode::kMixed, 6}}) {
           edits.push_back([m, n](Case& c) { c.mode = m, c.num_calls = n; });
         }
         return edits;
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         c.mode = static_cast<ExecMode>(r.below(4));
         constexpr std::pair<int, int> kCalls[] = {{1, 4}, {1, 6}, {1, 8}, {2, 10}};
         const auto [lo, hi] = kCalls[static_cast<int>(c.mode)];
         c.num_calls = r.between(lo, hi);
         // About 1 case in 12: a graph case of 5 or 6 replays is a graph set
         // (no extra draw, so every other random case stays what it was).
         if (c.mode == ExecMode::kGraph && c.num_calls >= 5) {
           c.mode = ExecMode::kGraphSet;
           c.churn = c.num_calls == 6;  // half of them churn allocations too
         }
       },
       // A graph set shrinks to the default mode or to one graph per slot.
       .shrink = [](const Case& c, std::vector<Case>& out) {
         shrink_to_default<&Case::mode>(c, out);
         if (c.mode == ExecMode::kGraphSet) out.push_back(c), out.back().mode = ExecMode::kGraph;
       },
       .measure = [](const Case& c) -> int64_t {
         return c.mode == ExecMode::kGraphSet ? 2 : off_default<&Case::mode>(c);
       },
       .to_json = json_put_name<&Case::mode>("mode"),
       .from_json = json_get_name<&Case::mode>("mode", kModes),
       .label = label_of<&Case::mode>},
      {.name = "calls",
       .token = [](const Case&) { return std::string(); },  // in the mode's token
       .read = [](IdTokens&, Case&) { return std::string(); },
       .shrink = shrink_count<&Case::num_calls>,
       .measure = value_of<&Case::num_calls>,
       .to_json = json_put<&Case::num_calls>("num_calls"),
       .from_json = json_get<&Case::num_calls>("num_calls"),
       .label = label_of<&Case::num_calls>},
      {.name = "layers",
       .token = [](const Case& c) {
         return c.num_layers == 1 ? std::string() : fmt::format("l{}", c.num_layers);
       },
       .read = [](IdTokens& t, Case& c) {
         if (auto v = prefixed_uint(t.peek(), "l")) c.num_layers = *v, t.next();
         return std::string();
       },
       .suite_values = [](const SuiteContext&) { return set_each<&Case::num_layers>(std::vector{1, 3}); },
       .full_pick = [](size_t row) -> size_t { return row % 5 == 2; },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         if (r.chance(0.3)) c.num_layers = r.between(2, 3);
       },
       .shrink = [](const Case& c, std::vector<Case>& out) {
         if (c.num_layers > 1) out.push_back(c), out.back().num_layers = 1;
         if (c.num_layers > 2) out.push_back(c), out.back().num_layers -= 1;
       },
       .measure = value_of<&Case::num_layers>,
       .to_json = json_put<&Case::num_layers>("num_layers"),
       .from_json = json_get<&Case::num_layers>("num_layers"),
       .label = label_of<&Case::num_layers>},
      {.name = "skew",
       .token = [](const Case& c) { return c.skew ? std::string("skew") : std::string(); },
       .read = [](IdTokens& t, Case& c) {
         if (t.peek() == "skew") c.skew = true, t.next();
         return std::string();
       },
       .suite_values = [](const SuiteContext&) { return set_each<&Case::skew>(std::vector{false, true}); },
       .full_pick = [](size_t row) -> size_t { return row % 7 == 1; },
       .draw = [](Rng& r, Case& c, const RandomContext&) { c.skew = r.chance(0.5); },
       .shrink = shrink_to_default<&Case::skew>,
       .measure = off_default<&Case::skew>,
       .to_json = json_put<&Case::skew>("skew"),
       .from_json = json_get<&Case::skew>("skew"),
       .label = [](const Case& c) { return std::string(c.skew ? "yes" : "no"); }},
      // Only the graph-set family sets it (no suite values, no draw); written
      // to JSON only when set, so other cases' JSON is what it was.
      {.name = "churn",
       .token = [](const Case& c) { return c.churn ? std::string("churn") : std::string(); },
       .read = [](IdTokens& t, Case& c) {
         if (t.peek() == "churn") c.churn = true, t.next();
         return std::string();
       },
       .shrink = shrink_to_default<&Case::churn>,
       .measure = off_default<&Case::churn>,
       .to_json = [](const Case& c, json& j) {
         if (c.churn) j["churn"] = true;
       },
       .from_json = [](const json& j, Case& c) { c.churn = j.value("churn", false); }},
      {.name = "epoch",
       .token = [](const Case& c) {
         return c.epoch_start ? fmt::format("ep{:x}", *c.epoch_start) : std::string();
       },
       .read = [](IdTokens& t, Case& c) {
         if (!t.peek().starts_with("ep")) return std::string();
         const auto v = parse_hex(t.peek().substr(2));
         if (!v || *v > 0xFFFFFFFFu) return bad(t.peek(), "ep<32-bit hex epoch>");
         c.epoch_start = static_cast<uint32_t>(*v);
         t.next();
         return std::string();
       },
       // Just below 2^31 and 2^32, after slots, calls and layers are set.
       .suite_values = [](const SuiteContext&) {
         return std::vector<CaseEdit>{[](Case& c) { c.epoch_start.reset(); },
                                      [](Case& c) { set_epoch_below(c, kEpochSignBit); },
                                      [](Case& c) { set_epoch_below(c, kEpochWrap); }};
       },
       .full_pick = [](size_t row) -> size_t { return row % 11 == 3; },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         if (r.chance(0.2)) {
           const uint64_t limit = r.chance(0.5) ? kEpochSignBit : kEpochWrap;
           c.epoch_start = static_cast<uint32_t>(limit - 1 - static_cast<uint64_t>(r.below(4)));
         }
       },
       .shrink = shrink_to_default<&Case::epoch_start>,
       .measure = [](const Case& c) { return int64_t{c.epoch_start.has_value()}; },
       .to_json = [](const Case& c, json& j) {
         j["epoch_start"] = c.epoch_start ? json(*c.epoch_start) : json(nullptr);
       },
       .from_json = [](const json& j, Case& c) {
         const json& v = j.at("epoch_start");
         c.epoch_start = v.is_null() ? std::nullopt : std::optional(v.get<uint32_t>());
       },
       .label = epoch_label},
      // Optional token "prod<slow|pdl>"; the default has none. Not a suite axis:
      // the suites add their producer cases by hand (suites.cpp).
      {.name = "producer",
       .token = [](const Case& c) {
         return c.producer == Producer::kDefault ? std::string() : "prod" + str(c.producer);
       },
       .read = [](IdTokens& t, Case& c) {
         if (!t.peek().starts_with("prod")) return std::string();
         const auto v = lookup(t.peek().substr(4), kProducers);
         if (!v || *v == Producer::kDefault) return bad(t.peek(), "prodslow|prodpdl");
         c.producer = *v;
         t.next();
         return std::string();
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         if (r.chance(0.05)) c.producer = r.chance(0.5) ? Producer::kSlow : Producer::kSlowPdl;
       },
       .shrink = shrink_to_default<&Case::producer>,
       .measure = off_default<&Case::producer>,
       .to_json = json_put_name<&Case::producer>("producer"),
       // Bundles written before the axis existed have no field: the default.
       .from_json = [](const json& j, Case& c) {
         c.producer = Producer::kDefault;
         if (j.contains("producer")) json_get_name<&Case::producer>("producer", kProducers)(j, c);
       },
       .label = label_of<&Case::producer>},
      // SM pressure: the sm-pressure family (in default, full and the
      // `pressure` suite) and 2% of random two-slot eager or pipelined cases
      // (drawn after the table-ordered axes). JSON only when set.
      {.name = "pressure",
       .token = [](const Case& c) {
         return c.pressure > 0 ? fmt::format("press{}", c.pressure) : std::string();
       },
       .read = [](IdTokens& t, Case& c) {
         if (!t.peek().starts_with("press")) return std::string();
         const auto v = prefixed_uint(t.peek(), "press");
         if (!v || *v < 1) return bad(t.peek(), "press<percent>");
         c.pressure = *v;
         t.next();
         return std::string();
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         if (c.num_slots == 2 && pressure_allowed(c.mode) && r.chance(0.02)) {
           c.pressure = r.chance(0.5) ? 90 : 50;
         }
       },
       .shrink = shrink_to_default<&Case::pressure>,
       .measure = off_default<&Case::pressure>,
       .to_json = [](const Case& c, json& j) {
         if (c.pressure > 0) j["pressure"] = c.pressure;
       },
       .from_json = [](const json& j, Case& c) { c.pressure = j.value("pressure", 0); },
       .label = [](const Case& c) {
         return c.pressure > 0 ? fmt::format("{}%", c.pressure) : std::string("none");
       }},
      // Input reuse: the input-reuse family and 5% of random cases (drawn last,
      // so the other axes of a random case keep their values). JSON only when set.
      {.name = "reuse",
       .token = [](const Case& c) { return c.reuse ? std::string("reuse") : std::string(); },
       .read = [](IdTokens& t, Case& c) {
         if (t.peek() == "reuse") c.reuse = true, t.next();
         return std::string();
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) { c.reuse = r.chance(0.05); },
       .shrink = shrink_to_default<&Case::reuse>,
       .measure = off_default<&Case::reuse>,
       .to_json = [](const Case& c, json& j) {
         if (c.reuse) j["reuse"] = true;
       },
       .from_json = [](const json& j, Case& c) { c.reuse = j.value("reuse", false); },
       .label = [](const Case& c) { return std::string(c.reuse ? "yes" : "no"); }},
      // Two kernel contexts per rank (Case::num_contexts): optional token
      // "ctx2". Not a suite axis (suites.cpp adds the family's cases); drawn
      // last of all (kDrawOrder), so other random cases keep their values.
      {.name = "contexts",
       .token = [](const Case& c) {
         return c.num_contexts == 2 ? std::string("ctx2") : std::string();
       },
       .read = [](IdTokens& t, Case& c) {
         if (!t.peek().starts_with("ctx")) return std::string();
         if (t.peek() != "ctx2") return bad(t.peek(), "ctx2");
         c.num_contexts = 2;
         t.next();
         return std::string();
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         if (r.chance(0.05)) c.num_contexts = 2;
       },
       .shrink = [](const Case& c, std::vector<Case>& out) {
         if (c.num_contexts > 1) out.push_back(c), out.back().num_contexts = 1;
       },
       .measure = [](const Case& c) { return int64_t{c.num_contexts > 1}; },
       .to_json = [](const Case& c, json& j) {
         if (c.num_contexts > 1) j["num_contexts"] = c.num_contexts;
       },
       .from_json = [](const json& j, Case& c) { c.num_contexts = j.value("num_contexts", 1); },
       .label = [](const Case& c) { return fmt::format("{}", c.num_contexts); }},
      // An init fault (Case::init_fault): optional token "initfail" or
      // "initlate<ms>". Not a suite axis (suites.cpp adds the init-faults
      // family); drawn after every other axis at 0.5%, so other random cases
      // keep their values. JSON only when set.
      {.name = "init",
       .token = [](const Case& c) {
         switch (c.init_fault) {
           case InitFault::kFail:
             return std::string("initfail");
           case InitFault::kLate:
             return fmt::format("initlate{}", c.init_late_ms);
           case InitFault::kNone:
             break;
         }
         return std::string();
       },
       .read = [](IdTokens& t, Case& c) {
         if (!t.peek().starts_with("init")) return std::string();
         if (t.peek() == "initfail") {
           c.init_fault = InitFault::kFail;
         } else if (auto ms = prefixed_uint(t.peek(), "initlate");
                    ms && *ms >= 1 && *ms <= kMaxInitLateMs) {
           c.init_fault = InitFault::kLate;
           c.init_late_ms = *ms;
         } else {
           return bad(t.peek(), fmt::format("initfail or initlate<1..{} ms>", kMaxInitLateMs));
         }
         t.next();
         return std::string();
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         if (!r.chance(0.005)) return;
         c.init_fault = r.chance(0.5) ? InitFault::kFail : InitFault::kLate;
         if (c.init_fault == InitFault::kLate) c.init_late_ms = r.chance(0.5) ? 20 : 200;
       },
       .shrink = [](const Case& c, std::vector<Case>& out) {
         if (c.init_fault == InitFault::kNone) return;
         out.push_back(c);
         out.back().init_fault = InitFault::kNone;
         out.back().init_late_ms = 0;
       },
       .measure = [](const Case& c) { return int64_t{c.init_fault != InitFault::kNone}; },
       .to_json = [](const Case& c, json& j) {
         if (c.init_fault == InitFault::kNone) return;
         j["init_fault"] = std::string(to_string(c.init_fault));
         if (c.init_fault == InitFault::kLate) j["init_late_ms"] = c.init_late_ms;
       },
       .from_json = [](const json& j, Case& c) {
         const std::string f = j.value("init_fault", std::string("none"));
         const auto v = lookup(f, kInitFaults);
         if (!v) throw std::invalid_argument(fmt::format("bad init_fault '{}'", f));
         c.init_fault = *v;
         c.init_late_ms = j.value("init_late_ms", 0);
       },
       .label = [](const Case& c) {
         return c.init_fault == InitFault::kLate ? fmt::format("late {} ms", c.init_late_ms)
                                                 : std::string(to_string(c.init_fault));
       }},
      // Memory stress: the memory-stress family (the `memstress` suite) and 5%
      // of random eager or pipelined cases. Last in the table but the seed, so
      // that the random cases drawn before it existed keep their values.
      // JSON only when set.
      {.name = "mstress",
       .token = [](const Case& c) { return c.mstress ? std::string("mstress") : std::string(); },
       .read = [](IdTokens& t, Case& c) {
         if (t.peek() == "mstress") c.mstress = true, t.next();
         return std::string();
       },
       .draw = [](Rng& r, Case& c, const RandomContext&) {
         if (pressure_allowed(c.mode) && r.chance(0.05)) c.mstress = true;
       },
       .shrink = shrink_to_default<&Case::mstress>,
       .measure = off_default<&Case::mstress>,
       .to_json = [](const Case& c, json& j) {
         if (c.mstress) j["mstress"] = true;
       },
       .from_json = [](const json& j, Case& c) { c.mstress = j.value("mstress", false); },
       .label = [](const Case& c) { return std::string(c.mstress ? "on" : "off"); }},
      // Drawn by suites and random_case from their own seeds, never shrunk.
      {.name = "seed",
       .token = [](const Case& c) { return fmt::format("s{:06x}", c.seed); },
       .read = [](IdTokens& t, Case& c) {
         const std::string_view tok = t.peek();
         const auto seed = tok.starts_with("s") ? parse_hex(tok.substr(1)) : std::nullopt;
         if (!seed) {
           return bad(tok, "[-l<layers>][-skew][-ep<hex>][-prod<slow|pdl>][-press<pct>][-reuse]"
                           "[-ctx2][-initfail|-initlate<ms>][-mstress]-s<hex seed>");
         }
         c.seed = *seed;
         t.next();
         return std::string();
       },
       .to_json = [](const Case& c, json& j) { j["seed"] = fmt::format("0x{:016x}", c.seed); },
       .from_json = [](const json& j, Case& c) {
         const std::string s = j.at("seed").get<std::string>();
         const auto v = s.starts_with("0x") ? parse_hex(s.substr(2)) : std::nullopt;
         if (!v) throw std::invalid_argument(fmt::format("bad seed '{}'", s));
         c.seed = *v;
       }},
  };
}

// Orders other than the table's, kept so that existing suites (the pairwise
// array depends on its axis order), random cases (one Rng stream) and shrink
// candidates stay what they were. Axes not named follow in table order.
constexpr std::string_view kSuiteOrder[] = {"dcp",   "out",  "lse",     "base", "tokens",
                                            "stride", "empty", "mode", "slots", "special",
                                            "skew",   "layers", "epoch"};
constexpr std::string_view kDrawOrder[] = {"dcp",     "out",  "lse",   "base",   "tokens",
                                           "stride",  "empty", "special", "mode", "slots",
                                           "layers",  "skew", "epoch"};
constexpr std::string_view kShrinkOrder[] = {"tokens", "calls", "layers", "mode", "stride", "special",
                                             "skew",   "slots", "epoch",  "dcp",  "empty"};

}  // namespace

IdTokens::IdTokens(std::string_view id) {
  size_t start = 0;
  while (true) {
    const size_t dash = id.find('-', start);
    toks_.push_back(id.substr(start, dash == std::string_view::npos ? dash : dash - start));
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
}

bool IdTokens::matches(std::string_view name) const {
  size_t i = pos_;
  while (true) {
    if (i >= toks_.size()) return false;
    const size_t dash = name.find('-');
    if (toks_[i] != name.substr(0, dash)) return false;
    ++i;
    if (dash == std::string_view::npos) return true;
    name.remove_prefix(dash + 1);
  }
}

const std::vector<AxisDesc>& case_axes_table() {
  static const std::vector<AxisDesc> table = make_table();
  return table;
}

std::vector<const AxisDesc*> axes_for(AxisUse use) {
  std::span<const std::string_view> order;
  switch (use) {
    case AxisUse::kSuite: order = kSuiteOrder; break;
    case AxisUse::kDraw: order = kDrawOrder; break;
    case AxisUse::kShrink: order = kShrinkOrder; break;
  }
  auto used = [use](const AxisDesc& a) {
    return use == AxisUse::kSuite ? bool(a.suite_values)
           : use == AxisUse::kDraw ? bool(a.draw)
                                   : bool(a.shrink);
  };
  std::vector<const AxisDesc*> out;
  for (std::string_view name : order) {
    for (const AxisDesc& a : case_axes_table()) {
      if (a.name == name && used(a)) out.push_back(&a);
    }
  }
  for (const AxisDesc& a : case_axes_table()) {
    if (used(a) && std::find(std::begin(order), std::end(order), a.name) == std::end(order)) {
      out.push_back(&a);
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> axis_labels(const Case& c) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const AxisDesc& a : case_axes_table()) {
    if (a.label) out.emplace_back(std::string(a.name), a.label(c));
  }
  return out;
}

nlohmann::json case_json(const Case& c) {
  json j = {{"id", format_case_id(c)}};
  for (const AxisDesc& a : case_axes_table()) a.to_json(c, j);
  return j;
}

Case case_from_json(const nlohmann::json& j) {
  Case c;
  for (const AxisDesc& a : case_axes_table()) a.from_json(j, c);
  return c;
}

nlohmann::json geometry_json(const Geometry& g) {
  return {{"name", g.name},
          {"heads_per_rank", g.heads_per_rank},
          {"head_dim", g.head_dim},
          {"max_tokens", g.max_tokens},
          {"storage_heads", g.storage_heads},
          {"source", g.source}};
}

Geometry geometry_from_json(const nlohmann::json& j) {
  Geometry g;
  g.name = j.at("name").get<std::string>();
  g.heads_per_rank = j.at("heads_per_rank").get<int>();
  g.head_dim = j.at("head_dim").get<int>();
  g.max_tokens = j.at("max_tokens").get<int>();
  g.storage_heads = j.at("storage_heads").get<int>();
  g.source = j.at("source").get<std::string>();
  return g;
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

Geometry canonical_geometry(const Geometry& g) {
  const auto preset = g.name.empty() ? std::nullopt : find_geometry(g.name);
  if (preset && *preset == g) return g;
  return custom_geometry(g.heads_per_rank, g.head_dim, g.max_tokens, g.storage_heads);
}

}  // namespace dcp
