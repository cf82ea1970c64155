// replay --dump DIR, one rank's share: after the case ran, the rank writes
// what it saw as .npy files (common/npy.h) and a manifest fragment
// rank<R>.json listing them; the replay command merges the fragments into
// DIR/manifest.json (app/dump_manifest.h). Per call (op) of the kernel under
// test: the inputs as the kernel read them (partial_output [T, out stride],
// partial_lse [T, lse stride], seq_lens and query_start_loc when the case
// masks), the kernel's output [T, H, D] and combined LSE [T, H], and the
// checker's float64 reference, each element's tolerance and the mismatch
// mask (the checker's rule: NaN, or |got - want| > tol). bf16 is stored as
// its raw bits ('<u2', manifest dtype "bfloat16").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend.h"
#include "case.h"
#include "checker.h"
#include "impl_agreement.h"

namespace dcp {

// Writes rank `bc.global_rank`'s tensors of case `c` for `calls` (in the
// order they ran) into `dir`, and returns its manifest fragment:
// {"rank", "group", "group_rank", "tensors": [{name, file, dtype, npy_dtype,
// shape, strides, logical_shape, op, call_tokens, role}, ...]}, also written to
// dir/rank<R>.json. Throws HarnessError when a file cannot be written.
nlohmann::json dump_rank_case(const std::string& dir, const Case& c, const BackendConfig& bc,
                              const std::vector<KeptCall>& calls, const CheckProfile& profile);

}  // namespace dcp
