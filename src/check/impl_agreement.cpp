#include "impl_agreement.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "generator.h"
#include "numeric.h"
#include "plan.h"

namespace dcp {
namespace {

constexpr size_t kMaxReported = 8;  // as RankCaseResult::first_mismatches

}  // namespace

int64_t check_impls_agree(const Case& c, int global_rank,
                          const std::vector<std::vector<uint8_t>>& direct,
                          const std::vector<std::vector<uint8_t>>& stock, RankCaseResult& into) {
  const Format f = format_of(c.out_dtype);
  const size_t elem = format_bytes(f);
  const int64_t H = c.geometry.heads_per_rank;
  const int64_t D = c.geometry.head_dim;
  int64_t differing = 0;
  auto record = [&](int op, int64_t index, double got, double want, double ulps) {
    ++differing;
    if (into.first_mismatches.size() >= kMaxReported) return;
    Mismatch m;
    m.rank = global_rank;
    m.op_idx = op;
    m.token = static_cast<int>(index / (H * D));
    m.head = static_cast<int>(index / D % H);
    m.dim = static_cast<int>(index % D);
    m.got = got;
    m.want = want;
    m.err_ulps = ulps;
    m.tolerance_ulps = 0;  // bit-exact
    m.likely_source = kImplsDisagree;
    into.first_mismatches.push_back(std::move(m));
  };
  if (direct.size() != stock.size()) {
    record(0, 0, static_cast<double>(stock.size()), static_cast<double>(direct.size()), INFINITY);
  }
  for (size_t op = 0; op < std::min(direct.size(), stock.size()); ++op) {
    const auto& a = direct[op];
    const auto& b = stock[op];
    if (a.size() != b.size()) {
      record(static_cast<int>(op), 0, static_cast<double>(b.size()), static_cast<double>(a.size()),
             INFINITY);
      continue;
    }
    if (std::memcmp(a.data(), b.data(), a.size()) == 0) continue;
    for (size_t i = 0; i + elem <= a.size(); i += elem) {
      uint32_t x = 0, y = 0;
      std::memcpy(&x, a.data() + i, elem);
      std::memcpy(&y, b.data() + i, elem);
      if (x == y) continue;
      // Same sign: the bit patterns are ordered, so their distance counts ULPs.
      const uint32_t sign = elem == 2 ? 0x8000u : 0x80000000u;
      const double ulps =
          (x & sign) == (y & sign) ? static_cast<double>(x > y ? x - y : y - x) : INFINITY;
      record(static_cast<int>(op), static_cast<int64_t>(i / elem), decode(f, y), decode(f, x),
             ulps);
    }
  }
  if (differing > 0) {
    into.passed = false;
    into.num_mismatches += differing;
  }
  return differing;
}

}  // namespace dcp
