#!/usr/bin/env bash
# The host-backend selftest in CI: the correct protocol model passes the suite
# and every host protocol mutant is detected, so CI proves that the checker and
# the protocol model can fail. Also: an unknown mutant is a usage error (2).
# Usage: e2e_selftest_host.sh /path/to/dcp-check
set -u
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*"
  exit 1
}

start=$SECONDS
timeout 240 "$bin" selftest --backend host --world 2 --geometry tiny --suite default \
  --json "$work/selftest.json" >"$work/out.txt" 2>&1
rc=$?
cat "$work/out.txt"
echo "(selftest took $((SECONDS - start)) s)"
[ "$rc" -eq 0 ] || fail "selftest exited $rc, want 0"

json="$work/selftest.json"
[ -s "$json" ] || fail "no JSON report written"
grep -q '"correct_passed": true' "$json" || fail "the correct kernel did not pass"
num_mutants=$(grep -c '"verdict":' "$json")
num_detected=$(grep -c '"verdict": "detected"' "$json")
# The host table has at least the two protocol mutants the issue names.
[ "$num_mutants" -ge 2 ] || fail "only $num_mutants host mutants ran"
[ "$num_detected" -eq "$num_mutants" ] ||
  fail "$num_detected of $num_mutants host mutants detected"
for name in single-parity early-signal; do
  grep -q "\"name\": \"$name\"" "$json" || fail "mutant $name missing from the report"
done
grep -q '^selftest PASSED' "$work/out.txt" || fail "no PASSED verdict line"

# An unknown mutant name is bad usage: exit 2 with a message naming it.
"$bin" selftest --backend host --world 2 --geometry tiny --suite smoke --mutants no-such \
  >"$work/usage.txt" 2>&1
rc=$?
cat "$work/usage.txt"
[ "$rc" -eq 2 ] || fail "unknown mutant exited $rc, want 2"
grep -q "no-such" "$work/usage.txt" || fail "usage error does not name the unknown mutant"
echo "PASS"
