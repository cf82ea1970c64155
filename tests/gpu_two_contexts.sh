#!/usr/bin/env bash
# Two kernel contexts per rank on the GPU (issue 15, item 5):
# - the two-contexts cases of the default suite (`--filter ctx2`: eager,
#   pipelined with layers and on two slots, graphs on two slots) pass with the
#   built-in direct kernel;
# - the selftest catches global-recv-buffers on the ctx2 cases, and it
#   survives every other case (one context per process is the correct kernel).
# Usage: gpu_two_contexts.sh path/to/dcp-check
# shellcheck source=tests/gpu_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/gpu_lib.bash"
gpu_init gpu_two_contexts "$@"
MUTANT=global-recv-buffers

# 1. The built-in kernel passes every two-contexts case.
n=$(num_cases --world 2 --filter ctx2)
run_dcp ctx2 240 --world 2 --filter ctx2
expect_rc ctx2 0 "world 2 two-contexts cases ($n)" && expect_pass_verdict ctx2 "$n"

# 2. The mutant: caught by the ctx2 cases, not by any other.
run_dcp mutant_ctx2 300 selftest --world 2 --fast --no-upstream --filter ctx2 --mutants "$MUTANT"
expect_rc mutant_ctx2 0 "selftest --filter ctx2 catches $MUTANT" &&
  expect_output mutant_ctx2 "the table says detected" "$MUTANT.*detected"
run_dcp mutant_other 600 selftest --world 2 --fast --no-upstream --filter '^((?!ctx2).)*$' \
  --mutants "$MUTANT"
expect_rc mutant_other 1 "selftest without ctx2: $MUTANT survives" &&
  expect_output mutant_other "the table says SURVIVED" "$MUTANT.*SURVIVED"

gpu_finish
