#!/usr/bin/env bash
# --against on the host backend (no GPU): two correct kernels that accumulate
# in a different order (the built-in host model of the direct kernel, and the
# reverse-order test plugin) differ by rounding only. By default they must
# agree within the reference tolerance (PASS, with the largest difference in
# ULPs printed and in the JSON); --against-exact demands bit identity (FAIL,
# exit 1, replay lines carrying --against-exact); a broken plugin fails.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
PLUGINS=$(cd "$(dirname "$BIN")/../tests/plugins" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
REVERSE=$PLUGINS/libdcp_host_plugin_reverse_order.so
HOST=(--backend host --world 2 --geometry tiny --timeout 5 --kernel direct)
source "$(dirname "${BASH_SOURCE[0]}")/expect_lib.bash"

expect 0 "--against: a correct kernel summing in reverse order agrees within tolerance" -- \
  "${HOST[@]}" --against "$REVERSE" --json "$WORK/tol.json" --junit "$WORK/tol.xml"
line=$(grep '^agreement:' "$WORK/out")
echo "     $line"
[[ $line == *"within tolerance on "*" elements; "*" differ bitwise, max "*" ulp at rank "* ]] ||
  fail "no agreement line with the max ULP difference: $line"
python3 - "$WORK/tol.json" <<'PY' || fail "JSON report lacks the agreement counts"
import json, sys
r = json.load(open(sys.argv[1]))
a = r["agreement"]
assert a["exact"] is False and r["configuration"]["against_exact"] is False, a
out = a["output"]
# Different rounding shows: some elements differ, none beyond tolerance.
assert out["compared"] > 0 and out["differing"] > 0 and out["beyond_tolerance"] == 0, out
assert out["max_ulps"] >= 1 and out["max_at"]["dim"] >= 0, out
assert a["lse"]["compared"] > 0, a["lse"]  # both emit the combined LSE
cases = [c for c in r["cases"] if c["status"] == "pass"]
assert cases and all("agreement" in c for c in cases), "per-case agreement missing"
assert sum(c["agreement"]["output"]["differing"] for c in cases) == out["differing"]
PY

expect 1 "--against-exact: the same two kernels fail on rounding differences" -- \
  "${HOST[@]}" --against "$REVERSE" --against-exact --junit "$WORK/exact.xml"
grep -q '^agreement: .*DISAGREE: .*bit identity (--against-exact)' "$WORK/out" ||
  fail "no failing agreement line: $(grep '^agreement' "$WORK/out")"
grep -q "likely kernel 'direct' and --against 'dcp-host-plugin-reverse-order' differ" "$WORK/out" ||
  fail "mismatches do not name both kernels"
grep -q 'agreement: .*DISAGREE' "$WORK/exact.xml" || fail "JUnit failure text lacks the agreement"
replay=$(grep -m1 -o 'dcp-check replay .*' "$WORK/out")
[[ $replay == *"--against $REVERSE --against-exact"* ]] || fail "replay line lacks --against-exact: $replay"
read -ra args <<<"${replay#dcp-check }"
expect 1 "the replay line reproduces the exact-mode failure" -- "${args[@]}"

expect 1 "a broken plugin against the host model fails" -- \
  "${HOST[@]}" --against "$PLUGINS/libdcp_host_plugin_bad_shape.so"
expect 2 "--against-exact without --against is a usage error" -- "${HOST[@]}" --against-exact
grep -q 'needs --against' "$WORK/err" || fail "usage error does not say what is missing"

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all --against checks passed"
