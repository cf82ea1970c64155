// One (token, head) row of a call's float64 reference and the bound each of
// its elements is judged by: the one tolerance rule (derived in checker.cpp),
// shared by the checker and by the comparison of two kernels
// (impl_agreement.h), so the two can never drift apart.
#pragma once

#include <cstddef>
#include <vector>

#include "case.h"
#include "combine_reference.h"
#include "generator.h"

namespace dcp {

// The upstream profile's bound: |got - want| <= kUpstreamTol (1 + |want|)
// against an fp32 reference.
inline constexpr double kUpstreamTol = 3e-2;

// Everything needed to judge and explain one row's elements. Reused row after
// row (sizes never change within a call).
struct RowReference {
  std::vector<SourceLse> lse;
  CombineWeights weights;
  std::vector<std::vector<double>> x;  // per source, D values (only sources read)
  std::vector<bool> loaded;
  std::vector<const double*> ptrs;
  std::vector<double> want, abs_sum;
  std::vector<float> want32;
  std::vector<double> want32_wide;  // want32 as double, for the checker's lanes
};

LogBase log_base(LseBase b);

// The row's LSEs and weights (cheap: W values). `head` is the group-wide head.
void row_weights(const Case& c, const OpGenerator& gen, int token, int head, RowReference& r);
// The rest of the row, after row_weights: the sources read, the float64
// combine, and the fp32 one for the upstream profile.
void row_values(const Case& c, const OpGenerator& gen, int token, int head, bool upstream,
                RowReference& r);

// After row_values: the value element `d` is compared with (the fp32
// reference in the upstream profile) and its bound. All-masked rows: 0 and 0
// (exactly zero; +0 and -0 both compare equal to it).
double row_want(const RowReference& r, size_t d, bool upstream);
double row_element_tolerance(const Case& c, const RowReference& r, size_t d, bool upstream);

// The row's combined LSE: the float64 reference and its bound (after
// row_weights). All-masked rows: -inf, which must be met exactly (tol 0).
struct LseBound {
  double want = 0;
  double tol = 0;
};
LseBound row_lse_bound(const Case& c, const CombineWeights& w);

}  // namespace dcp
