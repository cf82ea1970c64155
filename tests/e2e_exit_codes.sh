#!/usr/bin/env bash
# One check per exit code of SPEC section 2, on the real binary (host backend):
#   0 every case passed; 1 the kernel failed a check; 2 bad usage or missing
#   environment; 3 the harness itself failed.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
HOST=(--backend host --world 2 --geometry tiny --suite smoke --timeout 5)
source "$(dirname "${BASH_SOURCE[0]}")/expect_lib.bash"

# 0: a clean host run.
expect 0 "host backend smoke suite passes" -- "${HOST[@]}"
grep -q '^PASS' "$WORK/out" || { echo "FAIL: no PASS verdict line"; failures=$((failures + 1)); }

# 1: a rank corrupts its output in case 0, op 0: the checker must catch it,
# print a replay line, and the verdict must be FAIL.
expect 1 "injected output corruption is a kernel failure" -- "${HOST[@]}" --inject-fault corrupt:1:0:0
grep -q '^FAIL' "$WORK/out" || { echo "FAIL: no FAIL verdict line"; failures=$((failures + 1)); }
grep -q 'dcp-check replay w2-' "$WORK/out" || { echo "FAIL: no replay line"; failures=$((failures + 1)); }
# The same failure in JUnit (junitparser reads it in e2e_junit_junitparser).
expect 1 "the kernel failure in JUnit" -- "${HOST[@]}" --inject-fault corrupt:1:0:0 --junit "$WORK/fail.xml"
python3 - "$WORK/fail.xml" <<'PYEOF' || failures=$((failures + 1))
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
failed = [c for c in root.iter("testcase") if c.find("failure") is not None]
assert len(failed) >= 1, "no <failure> in the JUnit report"
f = failed[0].find("failure")
assert f.get("type") in ("mismatch", "nan"), f.get("type")
assert "dcp-check replay w2-" in (f.text or ""), "the failure body has no replay line"
assert int(root.get("failures")) == len(failed), (root.get("failures"), len(failed))
print("ok   JUnit failure structure")
PYEOF

# 2: bad usage...
expect 2 "bad flag value" -- "${HOST[@]}" --world 1
grep -q -- '--world' "$WORK/err" || { echo "FAIL: the message does not name --world"; failures=$((failures + 1)); }
# ...and a missing environment: the GPU backend on a machine without a GPU.
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "skip exit 2 for 'gpu backend without a GPU': this machine has a GPU"
else
  expect 2 "gpu backend without a GPU" -- --world 2 --geometry tiny --suite smoke
  grep -q -- '--backend host' "$WORK/err" || { echo "FAIL: the message does not point to --backend host"; failures=$((failures + 1)); }
  [[ $(wc -l <"$WORK/err") -eq 1 ]] || { echo "FAIL: want exactly one stderr line"; failures=$((failures + 1)); }
fi

# 3: the harness itself fails: the JSON report cannot be written because the
# device is full (/dev/full passes the up-front writability check, as a full
# disk would, and fails at write time). The cases passed; the run did not.
if [[ -w /dev/full ]]; then
  expect 3 "the report cannot be written (ENOSPC)" -- "${HOST[@]}" --json /dev/full
  grep -qi 'harness' "$WORK/err" || { echo "FAIL: the message does not say harness"; failures=$((failures + 1)); }
else
  echo "skip exit 3 check: /dev/full is not available"
fi

echo "$failures failures"
[[ $failures -eq 0 ]]
