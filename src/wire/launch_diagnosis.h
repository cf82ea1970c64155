// The hang diagnosis from what each rank's process launched (launch_table.h),
// with no help from the kernel: for every rank and stream the kernels of the
// stuck call in launch order, which completed, the first incomplete one and
// for how long, how many of its blocks can be resident at once on the SMs the
// rank may use, and a forward-progress verdict. Pure functions of the tables,
// so CI tests them on recorded traces without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "launch_table.h"

namespace dcp {

struct RankLaunches {
  int rank = 0;                         // global rank
  const LaunchTable* table = nullptr;   // null: no table (host backend)
  bool answered = false;                // the worker answered the snapshot request
};

struct LaunchDiagnosis {
  // One line per rank and stream of the case: "rank 0 stream 'dcp2 slot 1': ...".
  std::vector<std::string> streams;
  // "" when none applies; else starts with "forward-progress: ".
  std::string verdict;
  // The short form for the case's one-line message: the first incomplete
  // kernel per rank ("rank 0: combine_kernel (slot 1) incomplete 9.1 s; ...").
  std::string summary;
  // Every table was off (or absent): the reason from the first, "" otherwise.
  std::string not_observed;
};

// `case_index`: the case in progress (its launches only). `now_ns`: the
// snapshot's time (monotonic_ns), for "incomplete for X s".
LaunchDiagnosis diagnose_launches(const std::vector<RankLaunches>& ranks, int case_index,
                                  int64_t now_ns);

// Every CONTROL region of every rank, side by side per rank: one block per
// (group, context, region), rows of 8 bytes as u64 and two u32 words, rows
// where the ranks differ marked '*'; all-zero rows equal on every rank are
// folded. Empty when no rank dumped a region. `dcp_size` > 0: only that
// group size's regions.
std::vector<std::string> control_dump_lines(const std::vector<RankLaunches>& ranks,
                                            int dcp_size = 0);

// The warning for a launch whose grid exceeds what can be resident at once on
// the SMs the rank may use ("" when it does not, or residency is unknown).
// `rank_sms`: the rank's SMs without SM pressure (its MPS share, or the GPU).
std::string residency_warning(const LaunchRecord& r, int rank_sms);

// A demangled kernel name shortened for messages: no parameter list, no
// leading namespaces or return type ("combine_kernel<true>").
std::string short_kernel_name(const std::string& demangled);

}  // namespace dcp
