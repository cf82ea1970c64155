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
# Caught by the PDL cases, not by the slow ones without PDL.
check_family prod no-grid-dependency-wait prodpdl prodslow
gpu_finish
