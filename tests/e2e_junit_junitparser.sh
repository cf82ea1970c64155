#!/usr/bin/env bash
# JUnit reports read by junitparser (an optional validator and a real
# consumer): a passing run has every testcase passed, a failing one (injected
# corruption) has its failures where the report's counts say. Without
# junitparser this test exits 77, which CTest lists as skipped by name: a
# missing validator is reported, never silently skipped.
# DCP_REQUIRE_VALIDATORS=1 makes it a failure.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# shellcheck source=validator_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/validator_lib.bash"

# The Debian package installs junitparser for /usr/bin/python3, which a
# pyenv/venv python3 on PATH may not see.
PY=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import junitparser' 2>/dev/null; then
    PY=$candidate
    break
  fi
done
if [[ -z $PY ]]; then
  missing "junitparser is not importable (Debian: python3-junitparser); JUnit is checked by Python's parser only"
fi

HOST=(--backend host --world 2 --geometry tiny --suite smoke)
timeout 120 "$BIN" "${HOST[@]}" --junit "$WORK/pass.xml" >"$WORK/pass.out" 2>&1 </dev/null
rc_pass=$?
timeout 120 "$BIN" "${HOST[@]}" --inject-fault corrupt:1:0:0 --junit "$WORK/fail.xml" \
  >"$WORK/fail.out" 2>&1 </dev/null
rc_fail=$?
if [[ $rc_pass -ne 0 || $rc_fail -ne 1 ]]; then
  echo "FAIL: runs exited $rc_pass and $rc_fail, want 0 and 1"
  tail -5 "$WORK/pass.out" "$WORK/fail.out"
  exit 1
fi

"$PY" - "$WORK/pass.xml" "$WORK/fail.xml" <<'PY'
import sys
import junitparser

def cases(path):
    return [c for suite in junitparser.JUnitXml.fromfile(path) for c in suite]

passed = cases(sys.argv[1])
assert passed and all(c.is_passed for c in passed), "a testcase of the passing run is not passed"
print(f"ok   junitparser {getattr(junitparser, 'version', '?')}: {len(passed)} testcases, all passed")
failed = [c for c in cases(sys.argv[2]) if not c.is_passed and not c.is_skipped]
assert failed, "junitparser sees no failure in the failing run"
xml = junitparser.JUnitXml.fromfile(sys.argv[2])
assert sum(s.failures + s.errors for s in xml) == len(failed), "counts disagree with testcases"
print(f"ok   junitparser reads {len(failed)} failed testcase(s) where the counts say")
PY
