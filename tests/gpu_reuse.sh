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
check_family reuse unjoined-side-stream reuse '^((?!reuse).)*$'
gpu_finish
