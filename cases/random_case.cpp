#include "random_case.h"

#include <fmt/format.h>

#include <stdexcept>

#include "geometry.h"
#include "mix.h"
#include "suites.h"

namespace dcp {
namespace {
enum Tag : uint64_t { kTagRandomCase = 0xDC9C2001, kTagRandomSeed };
}  // namespace

Case random_case(uint64_t stress_seed, uint64_t index, int world, const Geometry& geometry) {
  const std::vector<int> sizes = dcp_sizes_for_world(world);
  if (sizes.empty()) {
    throw std::invalid_argument(fmt::format("world {} has no DCP group size >= 2", world));
  }
  Rng rng(hash_all(stress_seed, kTagRandomCase, index));
  Case c;
  // Overridden presets are written as custom geometries (ids must round trip).
  const auto preset = geometry.name.empty() ? std::nullopt : find_geometry(geometry.name);
  c.geometry = preset && *preset == geometry
                   ? geometry
                   : custom_geometry(geometry.heads_per_rank, geometry.head_dim,
                                     geometry.max_tokens, geometry.storage_heads);
  const Geometry& g = c.geometry;
  c.dcp_size = sizes[static_cast<size_t>(rng.below(static_cast<int>(sizes.size())))];
  c.out_dtype = rng.chance(0.5) ? DType::kFp16 : DType::kBf16;
  constexpr DType kLse[] = {DType::kFp32, DType::kFp16, DType::kBf16};
  c.lse_dtype = kLse[rng.below(3)];
  c.lse_base = rng.chance(0.5) ? LseBase::kE : LseBase::k2;
  // Token counts: uniform, small, or the full workspace.
  const int shape = rng.below(4);
  c.num_tokens = shape == 0   ? std::min(g.max_tokens, rng.between(1, 8))
                 : shape == 1 ? g.max_tokens
                              : rng.between(1, g.max_tokens);
  const int spare_heads = g.storage_heads - c.dcp_size * g.heads_per_rank;
  if (rng.chance(0.5)) {
    c.out_pad_elems = spare_heads > 0 && g.storage_heads > 0 && rng.chance(0.5)
                          ? spare_heads * g.head_dim
                          : 8 * rng.between(1, 16);
  }
  if (rng.chance(0.5)) c.lse_pad_elems = rng.between(1, 40);
  c.empty = static_cast<EmptyPattern>(rng.below(5));
  if (rng.chance(0.5)) c.special = static_cast<SpecialLse>(rng.between(1, 5));
  c.mode = static_cast<ExecMode>(rng.below(4));
  switch (c.mode) {
    case ExecMode::kEager:
      c.num_calls = rng.between(1, 4);
      break;
    case ExecMode::kGraph:
      c.num_calls = rng.between(1, 6);
      break;
    case ExecMode::kPipelined:
      c.num_calls = rng.between(1, 8);
      break;
    case ExecMode::kMixed:
      c.num_calls = rng.between(2, 10);
      break;
  }
  if (c.num_calls >= 2 && rng.chance(0.5)) c.num_slots = 2;
  if (rng.chance(0.3)) c.num_layers = rng.between(2, 3);
  c.skew = rng.chance(0.5);
  if (rng.chance(0.2)) c.epoch_start = 0xFFFFFFFFu - static_cast<uint32_t>(rng.below(4));
  c.seed = hash_all(stress_seed, kTagRandomSeed, index) & 0xFFFFFF;
  return c;
}

}  // namespace dcp
