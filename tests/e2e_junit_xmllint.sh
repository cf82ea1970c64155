#!/usr/bin/env bash
# JUnit reports validated by xmllint (an optional validator): a passing run and
# a failing one (injected corruption) must be well-formed XML. Without xmllint
# this test exits 77, which CTest lists as skipped by name: a missing validator
# is reported, never silently skipped. DCP_REQUIRE_VALIDATORS=1 makes it a failure.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# shellcheck source=validator_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/validator_lib.bash"

if ! command -v xmllint >/dev/null 2>&1; then
  missing "xmllint is not installed (Debian: libxml2-utils); JUnit is checked by Python's parser only"
fi

failures=0
HOST=(--backend host --world 2 --geometry tiny --suite smoke)
# report NAME WANT_RC ARGS...: writes $WORK/NAME.xml, expects exit WANT_RC
report() {
  local name=$1 want=$2
  shift 2
  timeout 120 "$BIN" "${HOST[@]}" "$@" --junit "$WORK/$name.xml" >"$WORK/$name.out" 2>&1 </dev/null
  local rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL: $name run exited $rc, want $want"
    tail -5 "$WORK/$name.out"
    failures=$((failures + 1))
  elif xmllint --noout "$WORK/$name.xml"; then
    echo "ok   xmllint: the $name report is well-formed"
  else
    echo "FAIL: xmllint rejects the $name report"
    failures=$((failures + 1))
  fi
}

report pass 0
report fail 1 --inject-fault corrupt:1:0:0
exit $((failures > 0))
