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
check_family ctx2 global-recv-buffers ctx2 '^((?!ctx2).)*$'
gpu_finish
