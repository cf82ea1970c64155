// The call sequence of a case, identical on every rank of a group (slots and
// batch structure), with per-rank skew. Derived only from the Case, so replay
// reproduces the same sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "case.h"

namespace dcp {

struct PlannedCall {
  int op_idx = 0;        // call * num_layers + layer; selects the generated inputs
  int slot = 0;          // ubatch slot, same on every rank
  uint32_t skew_ns = 0;  // delay before the call on this rank (0 unless c.skew)
};

struct PlannedBatch {
  ExecMode mode = ExecMode::kEager;  // kEager, kGraph or kPipelined
  std::vector<PlannedCall> calls;
};

std::vector<PlannedBatch> plan_case(const Case& c, int group_rank);
int num_ops(const Case& c);  // c.num_calls * c.num_layers

}  // namespace dcp
