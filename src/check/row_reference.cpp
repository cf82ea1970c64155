#include "row_reference.h"

#include <cmath>

#include "checker.h"

namespace dcp {

LogBase log_base(LseBase b) { return b == LseBase::kE ? LogBase::kE : LogBase::k2; }

void row_weights(const Case& c, const OpGenerator& gen, int token, int head, RowReference& r) {
  const auto ws = static_cast<size_t>(c.dcp_size);
  r.lse.resize(ws);
  for (int s = 0; s < c.dcp_size; ++s) {
    r.lse[static_cast<size_t>(s)] = {gen.lse_value(s, token, head), gen.row_masked(s, token)};
  }
  combine_weights_into(r.lse, log_base(c.lse_base), r.weights);
}

void row_values(const Case& c, const OpGenerator& gen, int token, int head, bool upstream,
                RowReference& r) {
  const int w = c.dcp_size, d_count = c.geometry.head_dim;
  const auto ws = static_cast<size_t>(w), ds = static_cast<size_t>(d_count);
  r.x.resize(ws);
  r.loaded.assign(ws, false);
  r.ptrs.assign(ws, nullptr);
  for (int s = 0; s < w; ++s) {
    const auto si = static_cast<size_t>(s);
    if (r.weights.weight[si] == 0) continue;  // never read: may be NaN garbage
    r.x[si].resize(ds);
    gen.output_row(s, token, head, r.x[si].data());
    r.loaded[si] = true;
    r.ptrs[si] = r.x[si].data();
  }
  r.want.resize(ds);
  r.abs_sum.resize(ds);
  combine_values(r.weights, r.ptrs, d_count, r.want.data(), r.abs_sum.data());
  if (upstream) {
    r.want32.resize(ds);
    combine_row_fp32(r.lse, log_base(c.lse_base), r.ptrs, d_count, r.want32.data());
    r.want32_wide.assign(r.want32.begin(), r.want32.end());
  }
}

double row_want(const RowReference& r, size_t d, bool upstream) {
  return upstream ? r.want32[d] : r.want[d];
}

double row_element_tolerance(const Case& c, const RowReference& r, size_t d, bool upstream) {
  if (r.weights.all_masked) return 0;
  if (upstream) return kUpstreamTol + kUpstreamTol * std::fabs(r.want32[d]);
  return element_tolerance(c.out_dtype, r.want[d], c.dcp_size, r.abs_sum[d],
                           r.weights.lse_magnitude);
}

LseBound row_lse_bound(const Case& c, const CombineWeights& w) {
  LseBound b;
  b.want = reference_combined_lse(w, c.lse_base);
  b.tol = w.all_masked ? 0 : combined_lse_tolerance(b.want, c.dcp_size, w.lse_magnitude);
  return b;
}

}  // namespace dcp
