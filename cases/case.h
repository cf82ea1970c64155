// The case model: one struct that describes a scenario completely, and its
// stable, human-readable id. The id is the serialization: the supervisor sends
// ids to workers, replay tokens embed them, and parse_case_id(format_case_id(c))
// gives back an identical case. Pure C++ (no CUDA).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dcp {

enum class DType : uint8_t { kFp16, kBf16, kFp32 };
enum class LseBase : uint8_t { kE, k2 };

// Which ranks have an empty KV shard (seq_lens[s] == 0) for which sequence.
enum class EmptyPattern : uint8_t {
  kNone,    // no seq_lens passed at all (the kernel's "no masking" path)
  kOne,     // one rank (chosen from the seed) is empty for every sequence
  kAll,     // every rank is empty for about half the sequences: those rows are exactly 0
  kRandom,  // each (rank, sequence) empty with probability ~0.3, one token per sequence
  kSpec,    // several tokens per sequence (speculative decoding), random empties
};

// Special LSE values planted in some rows of some sources.
enum class SpecialLse : uint8_t {
  kNone,
  kEqual,    // all sources share one LSE for planted rows
  kHugeGap,  // one source dominates by > 200 (others underflow exp2 in fp32)
  kPosInf,   // +inf (counts as -inf per SPEC)
  kNegInf,   // -inf
  kNan,      // NaN (counts as -inf per SPEC)
};

enum class ExecMode : uint8_t {
  kEager,      // one call at a time, host sync after each
  kGraph,      // capture once per slot, replay num_calls times, fresh inputs before each replay
  kPipelined,  // num_calls back-to-back with no host sync, every output kept and checked
  kMixed,      // eager, graph and pipelined batches mixed (order drawn from the seed)
  kGraphSet,   // one graph per token count of graph_set_tokens() on each slot, all over the one
               // workspace, replayed interleaved (each call's T and slot from the seed), fresh
               // inputs before each replay; num_tokens is the largest T (plan.h)
};

// What writes partial_output and partial_lse right before the call (GPU backend;
// the host backend has no stream and runs every value like the default).
enum class Producer : uint8_t {
  kDefault,  // inputs copied in, partial_output by a producer kernel, then the copies of the rest
  kSlow,     // one producer kernel, the last thing before the op, writes both inputs over
             // poison; the block of the last token row waits ~30 us before writing it
  kSlowPdl,  // the same, triggering programmatic completion at its start; the op is asked to
             // launch with PDL (DCP_CALL_PDL; needs capability pdl)
};
// A fault injected into the kernel's init for the case (the init-faults
// family): every rank finalizes its context and inits a fresh one, and on one
// rank (init_fault_rank, from the seed) dcp-check either reports the init as
// failed without calling the kernel's init (kFail: every rank must stop with
// that message, none may hang; then every rank inits again, normally), or
// calls it init_late_ms late (kLate: the others must wait for it). The case's
// calls then run on the fresh context.
enum class InitFault : uint8_t { kNone, kFail, kLate };
inline constexpr int kMaxInitLateMs = 5000;

// Whether the case captures and replays CUDA graphs (skipped for a kernel
// that is not graph-safe).
inline bool uses_graphs(ExecMode m) {
  return m == ExecMode::kGraph || m == ExecMode::kMixed || m == ExecMode::kGraphSet;
}

// A model geometry: heads per rank and head dim after TP sharding.
struct Geometry {
  std::string name;         // preset name ("kimi") or "" for custom
  int heads_per_rank = 0;   // H
  int head_dim = 0;         // D (multiple of 8)
  int max_tokens = 0;       // workspace capacity (max T)
  int storage_heads = 0;    // heads of the padded backing storage (0: none, pad by 8 elements)
  std::string source;       // where the numbers come from (public config)
  bool operator==(const Geometry&) const = default;
};

struct Case {
  int dcp_size = 2;  // W: ranks in one DCP group
  Geometry geometry;
  DType out_dtype = DType::kBf16;
  DType lse_dtype = DType::kFp32;
  LseBase lse_base = LseBase::k2;
  // T, 1 <= T <= geometry.max_tokens, or max_tokens + 1 for a capacity case
  // (over_capacity): every rank's kernel must refuse its first call.
  int num_tokens = 1;
  int out_pad_elems = 0;      // extra elements per token row of partial_output (multiple of 8)
  int lse_pad_elems = 0;      // extra elements per token row of partial_lse
  EmptyPattern empty = EmptyPattern::kNone;
  SpecialLse special = SpecialLse::kNone;
  int num_slots = 1;          // ubatch slots used (1 or 2); with 2 the order is drawn from the seed
  ExecMode mode = ExecMode::kEager;
  int num_calls = 1;          // calls (eager), replays (graph, graph set), depth (pipelined),
                              // total (mixed)
  int num_layers = 1;         // each call repeated for L layers on the same workspace
  bool skew = false;          // random per-rank delays before calls
  // Allocation churn around graphs (vLLM #45487): after each capture, device
  // memory is freed and allocated again and kept filled with a canary that is
  // checked after every graph batch (GPU only; the host model has no graphs).
  bool churn = false;
  std::optional<uint32_t> epoch_start;  // set every slot's epoch to this before the case
  Producer producer = Producer::kDefault;
  // SM pressure (GPU only): percent of the SMs this rank may use that a
  // co-running spinning kernel occupies for each batch (0: none). Eager and
  // pipelined modes only (see pressure_allowed).
  int pressure = 0;
  // Memory stress (GPU only): a co-running kernel hammers a scratch region with
  // the access pattern `dcp-check litmus` found best on this GPU model, for
  // each batch, to provoke weak-memory reorderings (missing fences, relaxed
  // flags). Eager and pipelined modes only, as pressure.
  bool mstress = false;
  // Input reuse: right after each call returns, the caller's stream writes NaN
  // over partial_output and partial_lse (before the peers' combines finish).
  bool reuse = false;
  // Kernel contexts per rank (1 or 2). With 2 each rank holds two instances of
  // the kernel, each with its own workspace (two layers), and the case's ops
  // alternate between them in a seeded order (plan.h, contexts_of_ops): what
  // global state shared between contexts gets wrong.
  int num_contexts = 1;
  InitFault init_fault = InitFault::kNone;
  int init_late_ms = 0;  // kLate only: > 0
  uint64_t seed = 0;          // mixed into every generated value (printed as hex)

  bool operator==(const Case&) const = default;

  int out_token_stride() const;  // elements: W*H*D + out_pad_elems
  int lse_token_stride() const;  // elements: W*H + lse_pad_elems
};

// A capacity case: T is one over the workspace's capacity. It passes only when
// the kernel refuses the call on every rank (SPEC: capacity refusal).
inline bool over_capacity(const Case& c) { return c.num_tokens > c.geometry.max_tokens; }

// SM pressure levels the suites use, and where pressure may be applied: not
// under graphs (a capture must not overlap the pressure kernel's lifetime).
inline constexpr int kPressureLevels[] = {50, 90};
inline constexpr int kMaxPressure = 95;
inline bool pressure_allowed(ExecMode m) {
  return m == ExecMode::kEager || m == ExecMode::kPipelined;
}

// The edges the epoch cases start just below: where a signed 32-bit epoch
// overflows, and where a u32 one wraps (a u64 one leaves its low word).
inline constexpr uint64_t kEpochSignBit = uint64_t{1} << 31;
inline constexpr uint64_t kEpochWrap = uint64_t{1} << 32;
// Whether the case's epoch starts at most 4 calls below `edge`.
inline bool epoch_starts_below(const Case& c, uint64_t edge) {
  return c.epoch_start && *c.epoch_start < edge && edge - *c.epoch_start <= 4;
}

// Format: dcp4-kimi-bf16-lsefp32-base2-t17-pad64x0-emptyone[-special<v>]-ub2-graph4
//         [-l<L>][-skew][-churn][-ep<hex>][-prodslow|-prodpdl][-press<pct>][-reuse][-ctx2]
//         [-initfail|-initlate<ms>]-s<hex>
// (each axis's tokens, in the order of the axis table, cases/axes.h).
// "contig" replaces "pad0x0". A custom geometry is written h<H>d<D>m<maxT>[p<storage>].
std::string format_case_id(const Case& c);

// Parses an id; on failure returns nullopt and sets *error to one clear line.
std::optional<Case> parse_case_id(std::string_view id, std::string* error);

// Short names used in ids, summaries and the CLI.
std::string_view to_string(DType d);
std::string_view to_string(LseBase b);
std::string_view to_string(EmptyPattern e);
std::string_view to_string(SpecialLse s);
std::string_view to_string(ExecMode m);
std::string_view to_string(Producer p);  // "default", "slow", "pdl"
std::string_view to_string(InitFault f);  // "none", "fail", "late"

}  // namespace dcp
