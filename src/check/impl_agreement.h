// --against: a second kernel runs the same case after the first, and both are
// checked against the float64 reference (checker.h). Here the two are also
// compared with each other, element by element, outputs and (when both emit
// it) combined LSEs:
//   - exact (--against-exact, and --impl both, whose direct and stock paths
//     share kernels/combine_device.cuh and round once from the same fp32 sums
//     in the same order): any differing bit fails;
//   - otherwise each element's |a - b| must be within twice the checker's own
//     bound for that element against the reference (row_reference.h, one
//     rule): a correct kernel may sit anywhere within that bound of the
//     reference, on either side, so two correct kernels that accumulate in a
//     different order differ by up to twice it (two values that round to
//     adjacent representable values are 1 ulp apart, while the bound itself is
//     about half an ulp). All-masked rows have bound 0: both exactly zero.
// Either way the largest difference (in ULPs, with its position), the number
// of elements that differ bitwise and the number beyond the bound are reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "case.h"
#include "numeric.h"
#include "results.h"

namespace dcp {

// One call's bytes as a kernel returned them, kept for the comparison.
struct KeptCall {
  int op_idx = 0;
  int num_tokens = 0;            // the call's T (a graph set's batch has its own)
  std::vector<uint8_t> output;   // [T, H, D] in the case's out dtype
  std::vector<uint8_t> lse;      // [T, H] fp32 combined LSE; empty when the kernel emits none
};

struct AgreementSpec {
  bool exact = false;
  bool upstream = false;  // CheckProfile::upstream: that profile's bound
  std::string kernel;     // the two kernels' names, for the mismatch text
  std::string against;
  int group_idx = 0;      // where the outputs come from (the reference's head slice)
  int group_rank = 0;
  int global_rank = 0;
};

// Compares `kernel`'s calls with `against`'s (the same calls, in the same
// order). Every element beyond the bound is added to `into` as a mismatch
// (got: --against, want: kernel, likely_source naming both kernels) and
// clears into.passed; into.agreement is set to the returned counts.
Agreement check_impls_agree(const Case& c, const std::vector<KeptCall>& kernel,
                            const std::vector<KeptCall>& against, const AgreementSpec& spec,
                            RankCaseResult& into);

// The distance between two values of `f` given as bits, in representable
// values (ULPs): 0 for +0 vs -0, across zero it adds both magnitudes;
// infinite when either is NaN.
double ulp_distance(Format f, uint32_t a, uint32_t b);

}  // namespace dcp
