#include "case.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <vector>

#include "geometry.h"

namespace dcp {
namespace {

constexpr DType kOutDTypes[] = {DType::kFp16, DType::kBf16};
constexpr DType kLseDTypes[] = {DType::kFp32, DType::kFp16, DType::kBf16};
constexpr LseBase kBases[] = {LseBase::kE, LseBase::k2};
constexpr EmptyPattern kEmpties[] = {EmptyPattern::kNone, EmptyPattern::kOne, EmptyPattern::kAll,
                                     EmptyPattern::kRandom, EmptyPattern::kSpec};
constexpr SpecialLse kSpecials[] = {SpecialLse::kNone,   SpecialLse::kEqual,  SpecialLse::kHugeGap,
                                    SpecialLse::kPosInf, SpecialLse::kNegInf, SpecialLse::kNan};
constexpr ExecMode kModes[] = {ExecMode::kEager, ExecMode::kGraph, ExecMode::kPipelined,
                               ExecMode::kMixed};

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

// Cursor over the '-'-separated tokens of an id; errors name the bad token.
class Tokens {
 public:
  explicit Tokens(std::string_view id) {
    size_t start = 0;
    while (true) {
      const size_t dash = id.find('-', start);
      toks_.push_back(id.substr(start, dash == std::string_view::npos ? dash : dash - start));
      if (dash == std::string_view::npos) break;
      start = dash + 1;
    }
  }
  bool done() const { return pos_ >= toks_.size(); }
  std::string_view peek() const { return done() ? std::string_view() : toks_[pos_]; }
  void next(size_t n = 1) { pos_ += n; }
  // True when the next tokens spell `name` (which may contain '-').
  bool matches(std::string_view name) const {
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
  static size_t count(std::string_view name) {
    return static_cast<size_t>(std::count(name.begin(), name.end(), '-')) + 1;
  }

 private:
  std::vector<std::string_view> toks_;
  size_t pos_ = 0;
};

std::string bad(std::string_view tok, std::string_view expected) {
  if (tok.empty()) return fmt::format("missing token (expected {})", expected);
  return fmt::format("bad token '{}' (expected {})", tok, expected);
}

// Semantic checks on a syntactically valid case; "" when fine.
std::string validate(const Case& c) {
  const Geometry& g = c.geometry;
  if (c.dcp_size < 2) return fmt::format("dcp size {} must be >= 2", c.dcp_size);
  // Generous sanity limits that keep every stride and buffer size in range.
  if (c.dcp_size > 64 || g.heads_per_rank > 4096 || g.head_dim > 65536 || g.max_tokens > 65536 ||
      g.storage_heads > 65536 || c.out_pad_elems > (1 << 24) || c.lse_pad_elems > (1 << 24) ||
      c.num_calls > 100000 || c.num_layers > 1000 ||
      int64_t{c.dcp_size} * g.heads_per_rank * g.head_dim > (1 << 26)) {
    return "sizes out of range (dcp <= 64, W*H*D <= 2^26, pads <= 2^24, calls <= 1e5, layers "
           "<= 1000)";
  }
  if (g.heads_per_rank < 1) return "heads per rank must be >= 1";
  if (g.head_dim < 8 || g.head_dim % 8 != 0) {
    return fmt::format("head dim {} must be a positive multiple of 8", g.head_dim);
  }
  if (g.max_tokens < 1) return "max tokens must be >= 1";
  if (c.num_tokens < 1 || c.num_tokens > g.max_tokens) {
    return fmt::format("t{} must be in [1, max_tokens={}]", c.num_tokens, g.max_tokens);
  }
  if (c.out_pad_elems % 8 != 0) {
    return fmt::format("output pad {} must be a multiple of 8 elements", c.out_pad_elems);
  }
  if (c.num_slots < 1 || c.num_slots > 2)
    return fmt::format("ub{} must be ub1 or ub2", c.num_slots);
  if (c.num_calls < 1) return "the mode's call count must be >= 1";
  if (c.num_layers < 1) return "layer count must be >= 1";
  return "";
}

// Each parse step consumes its tokens into `c`, or returns the error line.
using Step = std::string (*)(Tokens&, Case&);

std::string parse_group_and_geometry(Tokens& t, Case& c) {
  const auto w = prefixed_uint(t.peek(), "dcp");
  if (!w) return bad(t.peek(), "dcp<size>");
  c.dcp_size = *w;
  t.next();
  // Preset names may contain '-': try the longest first.
  std::vector<Geometry> presets = geometry_presets();
  std::sort(presets.begin(), presets.end(),
            [](const Geometry& a, const Geometry& b) { return a.name.size() > b.name.size(); });
  for (const Geometry& g : presets) {
    if (t.matches(g.name)) {
      c.geometry = g;
      t.next(Tokens::count(g.name));
      return "";
    }
  }
  const auto g = parse_custom_geometry(t.peek());
  if (!g) return bad(t.peek(), "a geometry preset or h<H>d<D>m<maxT>[p<storage>]");
  c.geometry = *g;
  t.next();
  return "";
}

std::string parse_dtypes(Tokens& t, Case& c) {
  const auto out = lookup(t.peek(), kOutDTypes);
  if (!out) return bad(t.peek(), choices(kOutDTypes, ""));
  c.out_dtype = *out;
  t.next();
  const std::string_view lse_tok = t.peek();
  const auto lse =
      lse_tok.starts_with("lse") ? lookup(lse_tok.substr(3), kLseDTypes) : std::nullopt;
  if (!lse) return bad(lse_tok, choices(kLseDTypes, "lse"));
  c.lse_dtype = *lse;
  t.next();
  const std::string_view base_tok = t.peek();
  const auto base =
      base_tok.starts_with("base") ? lookup(base_tok.substr(4), kBases) : std::nullopt;
  if (!base) return bad(base_tok, "basee|base2");
  c.lse_base = *base;
  t.next();
  return "";
}

std::string parse_shape(Tokens& t, Case& c) {
  const auto tokens = prefixed_uint(t.peek(), "t");
  if (!tokens) return bad(t.peek(), "t<tokens>");
  c.num_tokens = *tokens;
  t.next();
  if (t.peek() == "contig") {
    t.next();
  } else {
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
  }
  const std::string_view empty_tok = t.peek();
  const auto empty =
      empty_tok.starts_with("empty") ? lookup(empty_tok.substr(5), kEmpties) : std::nullopt;
  if (!empty) return bad(empty_tok, choices(kEmpties, "empty"));
  c.empty = *empty;
  t.next();
  if (t.peek().starts_with("special")) {
    const auto v = lookup(t.peek().substr(7), kSpecials);
    if (!v || *v == SpecialLse::kNone) return bad(t.peek(), choices(kSpecials, "special"));
    c.special = *v;
    t.next();
  }
  return "";
}

std::string parse_execution(Tokens& t, Case& c) {
  const auto slots = prefixed_uint(t.peek(), "ub");
  if (!slots) return bad(t.peek(), "ub<slots>");
  c.num_slots = *slots;
  t.next();
  bool mode_ok = false;
  for (ExecMode m : kModes) {
    if (auto v = prefixed_uint(t.peek(), to_string(m))) {
      c.mode = m;
      c.num_calls = *v;
      t.next();
      mode_ok = true;
      break;
    }
  }
  if (!mode_ok) return bad(t.peek(), "eager<N>|graph<N>|pipe<N>|mix<N>");
  if (auto v = prefixed_uint(t.peek(), "l")) {
    c.num_layers = *v;
    t.next();
  }
  if (t.peek() == "skew") {
    c.skew = true;
    t.next();
  }
  if (t.peek().starts_with("ep")) {
    const auto v = parse_hex(t.peek().substr(2));
    if (!v || *v > 0xFFFFFFFFu) return bad(t.peek(), "ep<32-bit hex epoch>");
    c.epoch_start = static_cast<uint32_t>(*v);
    t.next();
  }
  const std::string_view seed_tok = t.peek();
  const auto seed = seed_tok.starts_with("s") ? parse_hex(seed_tok.substr(1)) : std::nullopt;
  if (!seed) return bad(seed_tok, "[-l<layers>][-skew][-ep<hex>]-s<hex seed>");
  c.seed = *seed;
  t.next();
  if (!t.done()) return bad(t.peek(), "nothing after the seed");
  return "";
}

std::optional<Case> parse_tokens(Tokens& t, std::string* err) {
  Case c;
  for (Step step : {parse_group_and_geometry, parse_dtypes, parse_shape, parse_execution}) {
    *err = step(t, c);
    if (!err->empty()) return std::nullopt;
  }
  return c;
}

}  // namespace

int Case::out_token_stride() const {
  return dcp_size * geometry.heads_per_rank * geometry.head_dim + out_pad_elems;
}

int Case::lse_token_stride() const { return dcp_size * geometry.heads_per_rank + lse_pad_elems; }

std::string format_case_id(const Case& c) {
  std::string id = fmt::format("dcp{}-{}-{}-lse{}-base{}-t{}-", c.dcp_size,
                               geometry_token(c.geometry), to_string(c.out_dtype),
                               to_string(c.lse_dtype), to_string(c.lse_base), c.num_tokens);
  if (c.out_pad_elems == 0 && c.lse_pad_elems == 0) {
    id += "contig";
  } else {
    id += fmt::format("pad{}x{}", c.out_pad_elems, c.lse_pad_elems);
  }
  id += fmt::format("-empty{}", to_string(c.empty));
  if (c.special != SpecialLse::kNone) id += fmt::format("-special{}", to_string(c.special));
  id += fmt::format("-ub{}-{}{}", c.num_slots, to_string(c.mode), c.num_calls);
  if (c.num_layers != 1) id += fmt::format("-l{}", c.num_layers);
  if (c.skew) id += "-skew";
  if (c.epoch_start) id += fmt::format("-ep{:x}", *c.epoch_start);
  id += fmt::format("-s{:06x}", c.seed);
  return id;
}

std::optional<Case> parse_case_id(std::string_view id, std::string* error) {
  std::string local;
  std::string* err = error ? error : &local;
  Tokens tokens(id);
  std::string why;
  auto c = parse_tokens(tokens, &why);
  if (c) why = validate(*c);
  if (c && why.empty()) {
    // One spelling per case: rejects e.g. "-l1" or upper-case hex, so ids
    // compare equal exactly when cases do.
    const std::string canonical = format_case_id(*c);
    if (canonical != id) why = fmt::format("not in canonical form (did you mean '{}'?)", canonical);
  }
  if (!why.empty()) {
    *err = fmt::format("bad case id '{}': {}", id, why);
    return std::nullopt;
  }
  return c;
}

std::string_view to_string(DType d) {
  switch (d) {
    case DType::kFp16:
      return "fp16";
    case DType::kBf16:
      return "bf16";
    case DType::kFp32:
      return "fp32";
  }
  return "?";
}

std::string_view to_string(LseBase b) { return b == LseBase::kE ? "e" : "2"; }

std::string_view to_string(EmptyPattern e) {
  switch (e) {
    case EmptyPattern::kNone:
      return "none";
    case EmptyPattern::kOne:
      return "one";
    case EmptyPattern::kAll:
      return "all";
    case EmptyPattern::kRandom:
      return "random";
    case EmptyPattern::kSpec:
      return "spec";
  }
  return "?";
}

std::string_view to_string(SpecialLse s) {
  switch (s) {
    case SpecialLse::kNone:
      return "none";
    case SpecialLse::kEqual:
      return "equal";
    case SpecialLse::kHugeGap:
      return "hugegap";
    case SpecialLse::kPosInf:
      return "posinf";
    case SpecialLse::kNegInf:
      return "neginf";
    case SpecialLse::kNan:
      return "nan";
  }
  return "?";
}

std::string_view to_string(ExecMode m) {
  switch (m) {
    case ExecMode::kEager:
      return "eager";
    case ExecMode::kGraph:
      return "graph";
    case ExecMode::kPipelined:
      return "pipe";
    case ExecMode::kMixed:
      return "mix";
  }
  return "?";
}

}  // namespace dcp
