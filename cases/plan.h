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
  int context = 0;       // kernel context (contexts_of_ops), same on every rank
};

struct PlannedBatch {
  ExecMode mode = ExecMode::kEager;  // kEager, kGraph or kPipelined
  std::vector<PlannedCall> calls;
  // The batch's token count: c.num_tokens, except in a graph set (one call,
  // all its layers, per batch), where it is the call's T from graph_set_tokens(c).
  int num_tokens = 0;
};

std::vector<PlannedBatch> plan_case(const Case& c, int group_rank);

// The token counts of a graph set (ExecMode::kGraphSet), ascending:
// {1, 8, T} clipped to [1, T] and de-duplicated (T = c.num_tokens, so a case
// needs T >= 2 for two graphs per slot). A capacity case's set is {T}.
std::vector<int> graph_set_tokens(const Case& c);

// The case one batch runs: c itself, or in a graph set c with the batch's T.
// The generator, the backend, the checker and the output hash see it.
Case batch_case(const Case& c, const PlannedBatch& batch);

// The token count op `op_idx` runs with (c.num_tokens but in a graph set).
int tokens_of_op(const Case& c, int op_idx);
int num_ops(const Case& c);  // c.num_calls * c.num_layers

// The kernel context of each op, by op_idx (all 0 unless c.num_contexts == 2).
// Seeded and the same on every rank: op 0 on context (seed bit), then the
// context alternates, except that one seeded op from the third on repeats its
// predecessor's (back-to-back calls on one context). A lone op runs on
// context 1, so every two-context case calls the second context.
std::vector<int> contexts_of_ops(const Case& c);

// The group rank whose init an init-fault case (Case::init_fault) fails or
// delays: drawn from the seed, the same on every rank.
int init_fault_rank(const Case& c);

}  // namespace dcp
