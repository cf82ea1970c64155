#!/usr/bin/env bash
# One rank's init failed or late on the GPU (issue 15 item 4):
# - the init-fault cases of the default suite (`--filter init`: dcp-check fails
#   one rank's init, or calls it 100 ms late, then the calls run on a fresh
#   context) pass with the built-in direct kernel;
# - the selftest catches unbounded-init-handshake on the initfail cases (a
#   hang inside init), and it survives every other case, the late ones too.
# Usage: gpu_init_faults.sh path/to/dcp-check
# shellcheck source=tests/gpu_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/gpu_lib.bash"
gpu_init gpu_init_faults "$@"
check_family init unbounded-init-handshake initfail '^((?!initfail).)*$'
gpu_finish
