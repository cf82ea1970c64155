#!/usr/bin/env bash
# Every worker under NVIDIA's compute-sanitizer (--sanitize), on the GPU:
# - the correct built-in kernel passes the world 2 smoke suite under memcheck
#   (exit 0, the header naming the tool), and the wall time with and without
#   the sanitizer is printed (docs/results: the overhead);
# - the read-far-past-input mutant (a read 1 TiB past its input, outside every
#   allocation; kernels/mutants.h) fails its case by memcheck: exit 1, the
#   finding names direct_dispatch_kernel, the read of 4 bytes, the address and
#   the thread/block, the JSON holds it, the replay line carries --sanitize;
# - without the sanitizer the same mutant's outcome is printed (a trap, or
#   nothing: "caught by --sanitize memcheck only").
# No compute-sanitizer on a GPU machine: skipped by name (exit 77).
# Usage: gpu_sanitize.sh path/to/dcp-check
# shellcheck source=tests/gpu_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/gpu_lib.bash"
gpu_init gpu_sanitize "$@"
SAN=${DCP_COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
if [[ ! -x $SAN ]]; then
  echo "SKIPPED: gpu_sanitize: no compute-sanitizer (\$DCP_COMPUTE_SANITIZER, \$PATH, /usr/local/cuda/bin)"
  exit 77
fi

SMOKE=(--world 2 --suite smoke)
run_dcp bare 600 "${SMOKE[@]}"
expect_rc bare 0 "smoke w2 without the sanitizer"
BARE_WALL=$WALL
run_dcp memcheck 600 "${SMOKE[@]}" --sanitize memcheck --json "$WORK/memcheck.json"
expect_rc memcheck 0 "smoke w2 under memcheck: the correct kernel passes clean" &&
  expect_output memcheck "the header names the tool" 'compute-sanitizer --tool memcheck'
echo "overhead: smoke w2 wall ${BARE_WALL} s bare, ${WALL} s under memcheck"

TOKEN=w2-$(timeout 60 "$BIN" list "${SMOKE[@]}" | head -n 1)
run_dcp mutant 600 replay "$TOKEN" --sanitize memcheck --mutant read-far-past-input \
  --json "$WORK/mutant.json"
expect_rc mutant 1 "read-far-past-input under memcheck fails its case" &&
  expect_output mutant "the finding names the kernel, the access, the address, thread and block" \
    "memcheck: Invalid __global__ read of size 4 bytes in kernel '[^']*direct_dispatch_kernel" \
    'address 0x[0-9a-f]+ is out of bounds' 'by thread \([0-9]+,[0-9]+,[0-9]+\) in block' \
    'dcp-check replay w2-.* --sanitize memcheck'
if python3 - "$WORK/mutant.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
c = r["cases"][0]
assert c["failure_type"] == "sanitizer", c["failure_type"]
f = c["sanitizer_findings"][0]
assert f["tool"] == "memcheck" and f["access"] == "read" and "direct_dispatch_kernel" in f["kernel"], f
PY
  pass "mutant JSON: failure 'sanitizer' with the finding"
else
  fail "mutant JSON lacks the finding"
fi

run_dcp mutant-bare 300 replay "$TOKEN" --mutant read-far-past-input
echo "without the sanitizer read-far-past-input exits $RC: $(grep -E '^(PASS|FAIL)' "$WORK/mutant-bare.out" | tail -n 1)"
gpu_finish
