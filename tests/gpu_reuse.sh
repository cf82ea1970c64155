#!/usr/bin/env bash
# Input reuse on the GPU (issue 15 item 7):
# - the reuse cases of the default suite (`--filter reuse`: NaN over both
#   inputs right after each call, eager, pipelined and graph) pass with the
#   built-in direct kernel;
# - the selftest catches unjoined-side-stream on the reuse cases, and it
#   survives every other case (`--filter '^((?!reuse).)*$'`).
# Usage: gpu_reuse.sh path/to/dcp-check
# shellcheck source=tests/gpu_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/gpu_lib.bash"
gpu_init gpu_reuse "$@"
MUTANT=unjoined-side-stream

# 1. The built-in kernel passes every reuse case.
n=$(num_cases --world 2 --filter reuse)
run_dcp reuse 240 --world 2 --filter reuse
expect_rc reuse 0 "world 2 reuse cases ($n)" && expect_pass_verdict reuse "$n"

# 2. The mutant: caught by the reuse cases, not by any other.
run_dcp mutant_reuse 300 selftest --world 2 --no-upstream --filter reuse --mutants "$MUTANT"
expect_rc mutant_reuse 0 "selftest --filter reuse catches $MUTANT" &&
  expect_output mutant_reuse "the table says detected" "$MUTANT.*detected"
run_dcp mutant_rest 600 selftest --world 2 --fast --no-upstream --filter '^((?!reuse).)*$' \
  --mutants "$MUTANT"
expect_rc mutant_rest 1 "selftest without the reuse cases: $MUTANT survives" &&
  expect_output mutant_rest "the table says SURVIVED" "$MUTANT.*SURVIVED"

gpu_finish
