#include "case.h"

#include <fmt/format.h>

#include "axes.h"

namespace dcp {
namespace {

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
  if (c.num_tokens < 1 || c.num_tokens > g.max_tokens + 1) {
    return fmt::format("t{} must be in [1, max_tokens={}], or max_tokens + 1 for a capacity case",
                       c.num_tokens, g.max_tokens);
  }
  if (c.out_pad_elems % 8 != 0) {
    return fmt::format("output pad {} must be a multiple of 8 elements", c.out_pad_elems);
  }
  if (c.num_slots < 1 || c.num_slots > 2)
    return fmt::format("ub{} must be ub1 or ub2", c.num_slots);
  if (c.num_calls < 1) return "the mode's call count must be >= 1";
  if (c.num_layers < 1) return "layer count must be >= 1";
  if (c.pressure < 0 || c.pressure > kMaxPressure) {
    return fmt::format("press{} must be in [1, {}] percent", c.pressure, kMaxPressure);
  }
  if (c.num_contexts < 1 || c.num_contexts > 2) {
    return fmt::format("{} kernel contexts: want 1, or 2 (ctx2)", c.num_contexts);
  }
  if ((c.init_fault == InitFault::kLate) != (c.init_late_ms > 0) || c.init_late_ms < 0 ||
      c.init_late_ms > kMaxInitLateMs) {
    return fmt::format("initlate{} must be in [1, {}] ms", c.init_late_ms, kMaxInitLateMs);
  }
  if (c.pressure > 0 && !pressure_allowed(c.mode)) {
    return fmt::format("press{} needs eager or pipelined calls, not {}", c.pressure,
                       to_string(c.mode));
  }
  if (c.mstress && !pressure_allowed(c.mode)) {
    return fmt::format("mstress needs eager or pipelined calls, not {}", to_string(c.mode));
  }
  return "";
}

}  // namespace

int Case::out_token_stride() const {
  return dcp_size * geometry.heads_per_rank * geometry.head_dim + out_pad_elems;
}

int Case::lse_token_stride() const { return dcp_size * geometry.heads_per_rank + lse_pad_elems; }

std::string format_case_id(const Case& c) {
  std::string id;
  for (const AxisDesc& a : case_axes_table()) {
    const std::string tok = a.token(c);
    if (tok.empty()) continue;
    if (!id.empty()) id += '-';
    id += tok;
  }
  return id;
}

std::optional<Case> parse_case_id(std::string_view id, std::string* error) {
  std::string local;
  std::string* err = error ? error : &local;
  IdTokens tokens(id);
  std::string why;
  Case c;
  for (const AxisDesc& a : case_axes_table()) {
    if (why = a.read(tokens, c); !why.empty()) break;
  }
  if (why.empty() && !tokens.done()) {
    why = fmt::format("bad token '{}' (expected nothing after the seed)", tokens.peek());
  }
  if (why.empty()) why = validate(c);
  if (why.empty()) {
    // One spelling per case: rejects e.g. "-l1" or upper-case hex, so ids
    // compare equal exactly when cases do.
    const std::string canonical = format_case_id(c);
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
    case ExecMode::kGraphSet:
      return "graphs";
  }
  return "?";
}

std::string_view to_string(InitFault f) {
  switch (f) {
    case InitFault::kNone:
      return "none";
    case InitFault::kFail:
      return "fail";
    case InitFault::kLate:
      return "late";
  }
  return "?";
}

std::string_view to_string(Producer p) {
  switch (p) {
    case Producer::kDefault:
      return "default";
    case Producer::kSlow:
      return "slow";
    case Producer::kSlowPdl:
      return "pdl";
  }
  return "?";
}

}  // namespace dcp
