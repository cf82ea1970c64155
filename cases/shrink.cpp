#include "shrink.h"

#include "axes.h"

namespace dcp {

int64_t shrink_measure(const Case& c) {
  int64_t m = 0;
  for (const AxisDesc& a : case_axes_table()) {
    if (a.measure) m += a.measure(c);
  }
  return m;
}

std::vector<Case> shrink_candidates(const Case& c) {
  std::vector<Case> steps;
  for (const AxisDesc* a : axes_for(AxisUse::kShrink)) a->shrink(c, steps);
  std::vector<Case> out;
  const int64_t measure = shrink_measure(c);
  for (Case& k : steps) {
    if (shrink_measure(k) < measure) out.push_back(std::move(k));
  }
  return out;
}

}  // namespace dcp
