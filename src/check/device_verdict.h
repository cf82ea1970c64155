// The CPU side of the device checker (kernels/device_check.h): the per-call
// parameters it regenerates the inputs from, its verdict as a CallCheck, and
// the audit's comparison of the two checkers' verdicts. Pure C++.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "case.h"
#include "checker.h"
#include "device_check.h"
#include "generator.h"

namespace dcp {

// Whether the device checker can check case `c` (its strict profile; the
// upstream profile and groups over kDeviceCheckMaxSources are the CPU's).
bool device_checkable(const Case& c, const CheckProfile& profile);

// Every source's row kinds of one op, [W][T] LseRowKind (the device checker
// and the device's LSE stream read them).
std::vector<uint8_t> row_kinds_of(const Case& c, const OpGenerator& gen);

// One call's parameters on `group_rank`, pointers left null: the caller sets
// output, combined_lse (when the kernel writes it) and row_kinds (where it
// put row_kinds_of's bytes).
DeviceCheckParams device_check_params(const Case& c, const OpGenerator& gen, int group_rank);

// The device's verdict as the CPU checker reports one (mismatches with their
// ULPs; no likely source: a failing call is re-checked on the CPU, which
// explains it).
CallCheck call_check_of(const DeviceCheckResult& r, const Case& c, int global_rank, int op_idx);

// "" when the two verdicts of one call agree: the same counts, the same
// first mismatches (position, got and want bit for bit) and the same digest;
// else one line with both verdicts.
std::string checker_disagreement(const CallCheck& device, uint64_t device_digest,
                                 const CallCheck& cpu, uint64_t cpu_digest);

// Whether the audit re-checks call `op_idx` of a case on the CPU: about one
// call in `one_in`, drawn from the case's seed, so a replay audits the same
// calls (the same on every rank: an audited call is audited whole).
bool audited_call(const Case& c, int group_idx, int op_idx, int one_in);

}  // namespace dcp
