#!/usr/bin/env bash
# --sanitize without a GPU: what cannot run is refused (exit 2, one line
# saying why), and the supervisor's plumbing runs end to end on the host
# backend under a stand-in sanitizer (tests/data/fake-compute-sanitizer.sh,
# allowed by the test-only DCP_TEST_SANITIZE_HOST=1): a clean log passes; a
# report written while the cases run fails the first case (exit 1) with the
# kernel, access, address, thread and block in the failure and the JSON, and
# a replay line carrying --sanitize; a report written only at the workers'
# exit fails the last case (exit 1), never dropped; a sanitizer that cannot
# start its worker ends the run (exit 3) quoting its log. On a GPU the real
# tool runs in gpu_sanitize.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FAKE=$HERE/data/fake-compute-sanitizer.sh
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=tests/expect_lib.bash
source "$HERE/expect_lib.bash"
said() {  # said WHAT REGEX: stderr or stdout of the last run matches
  if grep -Eq -- "$2" "$WORK/err" "$WORK/out"; then
    echo "ok   says $1"
  else
    fail "does not say $1 (/$2/)"
    tail -n 5 "$WORK/err" "$WORK/out"
  fi
}

expect 2 "--sanitize on the host backend" -- --world 2 --suite smoke --backend host --sanitize memcheck
said "the host backend has no GPU code" 'needs --backend gpu'
expect 2 "--sanitize with --mps on" -- --world 2 --suite smoke --sanitize memcheck --mps on
said "MPS is not supported" 'does not support MPS'
expect 2 "an unknown tool" -- --world 2 --suite smoke --sanitize leakcheck
said "the tools" 'memcheck, racecheck, synccheck, initcheck|memcheck.*racecheck'
DCP_COMPUTE_SANITIZER=/nonexistent/compute-sanitizer \
  expect 2 "no compute-sanitizer" -- --world 2 --suite smoke --sanitize memcheck
said "it was not found" 'compute-sanitizer not found'
expect 2 "stress has no --sanitize" -- stress --world 2 --backend host --duration 1s --sanitize memcheck

cat >"$WORK/report.txt" <<'TXT'
========= Invalid __global__ read of size 4 bytes
=========     at void dcp::direct_dispatch_kernel<(dcp::ElemType)0, (bool)1>(dcp::DirectA2AParams, int, int)+0x1f0
=========     by thread (0,0,0) in block (0,1,0)
=========     Address 0x7f4c3e000400 is out of bounds
=========     and is 1,099,511,627,776 bytes after the nearest allocation at 0x7e4c3e000000 of size 1,024 bytes
=========
========= ERROR SUMMARY: 1 error
TXT

export DCP_TEST_SANITIZE_HOST=1 DCP_COMPUTE_SANITIZER=$FAKE
SMOKE=(--world 2 --geometry tiny --suite smoke --backend host)
expect 0 "a clean sanitizer log passes" -- "${SMOKE[@]}" --sanitize memcheck --json "$WORK/clean.json"
said "the header names the tool and what it changes" 'compute-sanitizer --tool memcheck .*MPS off'

FAKE_REPORT_NOW=$WORK/report.txt \
  expect 1 "a report while the cases run fails" -- "${SMOKE[@]}" --sanitize memcheck --json "$WORK/now.json"
said "the kernel and the access" "memcheck: Invalid __global__ read of size 4 bytes in kernel 'void dcp::direct_dispatch_kernel"
said "the address and thread/block" 'address 0x7f4c3e000400 is out of bounds.*by thread \(0,0,0\) in block \(0,1,0\)'
said "a replay line with --sanitize" 'dcp-check replay w2-.* --sanitize memcheck'
python3 - "$WORK/now.json" <<'PY' || fail "now.json: the first case carries the findings"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["configuration"]["sanitize"] == "memcheck"
first = r["cases"][0]
assert first["status"] == "fail" and first["failure_type"] == "sanitizer", first["failure_type"]
f = first["sanitizer_findings"]
assert {x["rank"] for x in f} == {0, 1}, f
assert f[0]["access"] == "read" and f[0]["access_size"] == 4 and f[0]["block"] == "(0,1,0)", f[0]
assert "direct_dispatch_kernel" in f[0]["kernel"], f[0]
assert all("sanitizer_findings" not in c for c in r["cases"][1:]), "findings repeated"
print("ok   JSON: the first case failed by 'sanitizer' with both ranks' findings")
PY

FAKE_REPORT_AT_EXIT=$WORK/report.txt \
  expect 1 "a report only at teardown fails the last case" -- "${SMOKE[@]}" --sanitize memcheck --json "$WORK/late.json"
said "the teardown finding" "at the workers' teardown"
python3 - "$WORK/late.json" <<'PY' || fail "late.json: the last case carries the findings"
import json, sys
r = json.load(open(sys.argv[1]))
last = [c for c in r["cases"] if c["status"] != "skipped"][-1]
assert last["status"] == "fail" and last["failure_type"] == "sanitizer", last["status"]
assert len(last["sanitizer_findings"]) == 2, last["sanitizer_findings"]
assert all("sanitizer_findings" not in c for c in r["cases"] if c is not last)
print("ok   JSON: the last case failed by 'sanitizer' (teardown findings)")
PY

FAKE_START_FAILS=1 \
  expect 3 "a sanitizer that cannot start its worker" -- "${SMOKE[@]}" --sanitize memcheck
said "why, from the sanitizer's log" "during start-up; compute-sanitizer's log ends: ========= Error: Target application failed to start"

TOKEN=w2-$("$BIN" list --world 2 --geometry tiny --suite smoke | head -n 1)
FAKE_REPORT_AT_EXIT=$WORK/report.txt \
  expect 1 "replay: a teardown report fails the case" -- replay "$TOKEN" --backend host --sanitize memcheck
said "replay reports it" "compute-sanitizer memcheck reported 2 errors"

echo "$failures failures"
[[ $failures -eq 0 ]]
