#!/usr/bin/env bash
# The producer axis on the GPU (KERNELS.md failure mode 4, PDL):
# - the producer cases of the default suite (`--filter prod`: slow and PDL,
#   eager, pipelined and graph) pass with the built-in direct kernel;
# - the selftest catches no-grid-dependency-wait on the PDL cases
#   (`--filter prodpdl`), and it survives the slow cases without PDL
#   (`--filter prodslow`): only the PDL producer reaches it.
# (That a kernel without capability pdl skips them by name: e2e_hostile_cli.sh.)
# Usage: gpu_producer.sh path/to/dcp-check
# shellcheck source=tests/gpu_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/gpu_lib.bash"
gpu_init gpu_producer "$@"
MUTANT=no-grid-dependency-wait

# 1. The built-in kernel passes every producer case.
n=$(num_cases --world 2 --filter prod)
run_dcp producer 240 --world 2 --filter prod
expect_rc producer 0 "world 2 producer cases ($n)" && expect_pass_verdict producer "$n"

# 2. The mutant: caught by the PDL cases, not by the slow ones.
run_dcp mutant_pdl 300 selftest --world 2 --fast --no-upstream --filter prodpdl --mutants "$MUTANT"
expect_rc mutant_pdl 0 "selftest --filter prodpdl catches $MUTANT" &&
  expect_output mutant_pdl "the table says detected" "$MUTANT.*detected"
run_dcp mutant_slow 300 selftest --world 2 --fast --no-upstream --filter prodslow --mutants "$MUTANT"
expect_rc mutant_slow 1 "selftest --filter prodslow: $MUTANT survives without PDL" &&
  expect_output mutant_slow "the table says SURVIVED" "$MUTANT.*SURVIVED"

gpu_finish
