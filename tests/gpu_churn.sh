#!/usr/bin/env bash
# Allocation churn around captured graphs on the GPU (issue 15 item 9):
# - the churn cases of the default suite (two-slot graph sets: blocks from
#   cudaMalloc and the device's pool allocated after each capture, canary
#   checked after every batch) pass with the built-in direct kernel;
# - the selftest catches resized-staging on the churn cases, and it survives
#   every other case (the graph sets without churn too).
# Usage: gpu_churn.sh path/to/dcp-check
# shellcheck source=tests/gpu_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/gpu_lib.bash"
gpu_init gpu_churn "$@"
check_family churn resized-staging churn '^((?!churn).)*$'
gpu_finish
