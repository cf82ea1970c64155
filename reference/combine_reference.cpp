#include "combine_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace dcp {
namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
}  // namespace

double effective_l2(const SourceLse& s, LogBase base) {
  // SPEC: NaN and +inf count as -inf, and so does a masked row.
  if (s.masked || std::isnan(s.lse) || s.lse == std::numeric_limits<double>::infinity()) {
    return kNegInf;
  }
  return base == LogBase::kE ? s.lse * std::numbers::log2e : s.lse;
}

CombineWeights combine_weights(std::span<const SourceLse> sources, LogBase base) {
  CombineWeights w;
  const size_t n = sources.size();
  w.l2.resize(n);
  w.weight.assign(n, 0.0);
  double m = kNegInf;
  for (size_t s = 0; s < n; ++s) {
    w.l2[s] = effective_l2(sources[s], base);
    m = std::max(m, w.l2[s]);
  }
  if (m == kNegInf) {
    w.all_masked = true;
    return w;
  }
  w.max_l2 = m;
  double total = 0;
  for (size_t s = 0; s < n; ++s) {
    // exp2(-inf) == 0 exactly, so -inf sources get weight 0 and are never read.
    w.weight[s] = std::exp2(w.l2[s] - m);
    total += w.weight[s];
  }
  double max_abs_l2 = 0;
  for (size_t s = 0; s < n; ++s) {
    w.weight[s] /= total;
    if (w.weight[s] > 0) max_abs_l2 = std::max(max_abs_l2, std::fabs(w.l2[s]));
  }
  w.lse_magnitude = max_abs_l2 + std::fabs(m);
  return w;
}

void combine_values(const CombineWeights& w, std::span<const double* const> values, int head_dim,
                    double* out, double* abs_sum) {
  std::fill(out, out + head_dim, 0.0);
  if (abs_sum) std::fill(abs_sum, abs_sum + head_dim, 0.0);
  if (w.all_masked) return;
  for (size_t s = 0; s < w.weight.size(); ++s) {
    const double ws = w.weight[s];
    if (ws == 0) continue;  // never read: may be null or NaN garbage
    const double* x = values[s];
    for (int d = 0; d < head_dim; ++d) out[d] += ws * x[d];
    if (abs_sum) {
      for (int d = 0; d < head_dim; ++d) abs_sum[d] += ws * std::fabs(x[d]);
    }
  }
}

CombineRow combine_row(std::span<const SourceLse> sources, LogBase base,
                       std::span<const double* const> values, int head_dim) {
  CombineRow row;
  row.weights = combine_weights(sources, base);
  row.out.resize(head_dim);
  row.abs_sum.resize(head_dim);
  combine_values(row.weights, values, head_dim, row.out.data(), row.abs_sum.data());
  return row;
}

void combine_row_fp32(std::span<const SourceLse> sources, LogBase base,
                      std::span<const double* const> values, int head_dim, float* out) {
  const size_t n = sources.size();
  std::vector<float> l2(n);
  float m = -std::numeric_limits<float>::infinity();
  for (size_t s = 0; s < n; ++s) {
    const double e = effective_l2(
        {static_cast<double>(static_cast<float>(sources[s].lse)), sources[s].masked}, LogBase::k2);
    const float lse = static_cast<float>(e);
    l2[s] = base == LogBase::kE ? lse * std::numbers::log2e_v<float> : lse;
    m = std::max(m, l2[s]);
  }
  std::fill(out, out + head_dim, 0.0f);
  if (m == -std::numeric_limits<float>::infinity()) return;
  std::vector<float> w(n);
  float total = 0;
  for (size_t s = 0; s < n; ++s) {
    w[s] = std::exp2(l2[s] - m);
    total += w[s];
  }
  for (size_t s = 0; s < n; ++s) {
    if (w[s] == 0) continue;
    const float ws = w[s] / total;
    const double* x = values[s];
    for (int d = 0; d < head_dim; ++d) out[d] += ws * static_cast<float>(x[d]);
  }
}

}  // namespace dcp
