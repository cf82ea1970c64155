// Checks one call's output on one rank against the float64 reference, element
// by element. Tolerance (documented in checker.cpp): the kernel computes in fp32
// and rounds once, so |got - want| <= 0.5 ulp_out(|want| + e32) + e32, where e32
// bounds the fp32 arithmetic error from the reference's own terms. NaN never
// passes unless the reference is NaN (it never is for these inputs).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "case.h"
#include "combine_reference.h"
#include "results.h"

namespace dcp {

struct CheckProfile {
  bool upstream = false;  // rtol = atol = 3e-2 against an fp32 reference (selftest column)
  // Threads that check one call's rows (the caller's included): 1 checks on
  // the calling thread alone; N > 1 uses the process's shared pool of N
  // (ThreadPool::shared). Results are identical for every N. A rank sets it
  // to checker_threads(ranks on its host).
  int num_threads = 1;
  // The output is followed by the kernel's [T, H] fp32 combined LSE
  // (RankBackend::emits_combined_lse), checked too (combined_lse_tolerance).
  bool combined_lse = false;
  // --check gpu (the default): a backend that can (the GPU's) checks each
  // call on the device (kernels/device_check.h) and this checker re-checks
  // only the audit's sample (about one call in audit_one_in,
  // device_verdict.h), every call of a case from its first failing call on,
  // and what the device checker cannot take. false (--check cpu): every call
  // here, as on the host backend whatever this says.
  bool on_device = true;
  int audit_one_in = 64;
};

struct CallCheck {
  int64_t num_checked = 0;
  int64_t num_mismatches = 0;
  int64_t num_nan = 0;
  std::vector<Mismatch> first_mismatches;  // up to max_reported
};

// `out` is [T, H, D] contiguous in c.out_dtype; `lse` the [T, H] fp32
// combined LSE when profile.combined_lse, else empty. group_rank selects the
// head slice.
CallCheck check_call_output(const Case& c, int group_idx, int group_rank, int global_rank,
                            int op_idx, std::span<const uint8_t> out,
                            std::span<const uint8_t> lse, const CheckProfile& profile = {},
                            int max_reported = 8);
// `got`: the output, then the combined LSE when profile.combined_lse.
CallCheck check_call_output(const Case& c, int group_idx, int group_rank, int global_rank,
                            int op_idx, const std::vector<uint8_t>& got,
                            const CheckProfile& profile = {}, int max_reported = 8);

// A reported mismatch (dim -1: the combined LSE), its ULPs in the output
// format at `want` (fp32 for the LSE), as check_call_output reports it.
Mismatch mismatch_at(const Case& c, int global_rank, int op_idx, int token, int head, int dim,
                     double got, double want, double tol);

// Threads one rank should check with when `ranks_per_host` ranks check at
// the same time on this host: max(1, available_cpus() / ranks_per_host), or
// `override_threads` when it is > 0, else DCP_CHECK_THREADS when that is set
// to a positive number (diagnosis: how the check's share of the cores moves
// a run; docs/DESIGN.md).
int checker_threads(int ranks_per_host, int override_threads = 0);

// The float64 reference of one call's output on `group_rank`, rounded once to
// the output dtype: an output the checker passes (benchmarks, tests).
std::vector<uint8_t> rounded_reference_output(const Case& c, int group_idx, int group_rank, int op);

// The per-element bound documented in checker.cpp (additive: exposed so tests
// and reports can show it). abs_sum = sum_s w_s |x_s|; lse_magnitude = max over
// contributing sources of |l2_s|, plus |m| (CombineWeights::lse_magnitude).
double fp32_error_bound(int num_sources, double abs_sum, double lse_magnitude);
double element_tolerance(DType out, double want, int num_sources, double abs_sum,
                         double lse_magnitude);
// The bound for one combined-LSE element (fp32, in the inputs' base), derived
// in checker.cpp; an all-empty row's LSE must be exactly -inf.
double combined_lse_tolerance(double want, int num_sources, double lse_magnitude);
// The float64 combined LSE of one row in `base`: -inf when all sources are masked.
double reference_combined_lse(const CombineWeights& w, LseBase base);

}  // namespace dcp
