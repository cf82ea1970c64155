#include "random_case.h"

#include <fmt/format.h>

#include <stdexcept>

#include "axes.h"
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
  c.geometry = canonical_geometry(geometry);  // ids must round trip
  const RandomContext context{sizes};
  for (const AxisDesc* a : axes_for(AxisUse::kDraw)) a->draw(rng, c, context);
  c.seed = hash_all(stress_seed, kTagRandomSeed, index) & 0xFFFFFF;
  return c;
}

}  // namespace dcp
