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

# Runs the selftest into $work/<tag>.json (its terminal output to <tag>.txt).
selftest() {  # selftest TAG
  local start=$SECONDS
  timeout 240 "$bin" selftest --backend host --world 2 --geometry tiny --suite default \
    --timeout 2 --json "$work/$1.json" >"$work/$1.txt" 2>&1
  rc=$?
  cat "$work/$1.txt"
  echo "(selftest took $((SECONDS - start)) s)"
  [ "$rc" -eq 0 ] || fail "selftest exited $rc, want 0"
  [ -s "$work/$1.json" ] || fail "no JSON report written"
  tail -n 1 "$work/$1.txt" | grep -q '^PASS: selftest: ' || fail "the last line is not the PASS verdict"
}

# The report, parsed: the correct model passed, every host mutant was detected
# by the kind it exists for (a mismatch: the host model forces each protocol
# mutant's interleaving, so never by a hang or by luck; no-capacity-check by
# over-capacity, unbounded-init-handshake by the hang it is), and the two
# protocol mutants the issue names ran.
check_report() {  # check_report JSON
  python3 - "$1" <<'PY' || fail "selftest report: see the assertion above"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["correct_passed"] is True, "the correct kernel did not pass"
mutants = {m["name"]: m for m in r["mutants"]}
assert len(mutants) >= 2, f"only {len(mutants)} host mutants ran"
for name in ("single-parity", "early-signal"):
    assert name in mutants, f"mutant {name} missing from the report"
expected_how = {"no-capacity-check": "over-capacity", "unbounded-init-handshake": "hang"}
for name, m in mutants.items():
    assert m["verdict"] == "detected", f"{name}: verdict {m['verdict']}"
    want = expected_how.get(name, "mismatch")
    assert m["strict"]["how"] == want, f"{name}: detected by {m['strict']['how']}, not {want}"
assert r["num_detected"] == len(mutants), r["num_detected"]
print(f"ok   {len(mutants)} of {len(mutants)} host mutants detected, each by its kind")
PY
}

# Caught cases per mutant, "name=caught/run" sorted, from a report.
caught_counts() {  # caught_counts JSON
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(sorted(f"{m['name']}={m['strict']['num_caught']}/{m['strict']['num_run']}"
                      for m in r["mutants"])))
PY
}

selftest first
check_report "$work/first.json"
# Twice: with the interleavings forced, the same cases catch each mutant on
# every run (a race that is only sometimes won would change these counts).
selftest second
check_report "$work/second.json"
first=$(caught_counts "$work/first.json") || fail "cannot read caught counts"
second=$(caught_counts "$work/second.json") || fail "cannot read caught counts"
[ "$first" = "$second" ] || fail "caught counts differ between two runs: $first vs $second"
echo "ok   same caught counts on two runs: $first"

# host_selftest NAME WANT_RC FILTER MUTANT [ARGS...]: one selftest of MUTANT on
# the default suite's cases matching FILTER (output in $work/NAME.txt); fails
# unless it exits WANT_RC (0: detected, 1: survived).
host_selftest() {
  local name=$1 want=$2 filter=$3 mutant=$4 rc
  shift 4
  "$bin" selftest --backend host --world 2 --geometry tiny --suite default --filter "$filter" \
    --mutants "$mutant" --no-upstream "$@" >"$work/$name.txt" 2>&1
  rc=$?
  [ "$rc" -eq "$want" ] || { cat "$work/$name.txt"; fail "$mutant on '$filter' exited $rc, want $want"; }
}
# survives NAME MUTANT KIND: the run NAME's table says MUTANT survived.
survives() {
  grep -q "$2 ($3): SURVIVED" "$work/$1.txt" || fail "$2 does not survive the cases of run $1"
}

# no-grid-dependency-wait is reached only under PDL: the slow producer cases
# without it (stream order) miss it, so there it survives (exit 1).
host_selftest prodslow 1 prodslow no-grid-dependency-wait
survives prodslow no-grid-dependency-wait memory-ordering
echo "ok   no-grid-dependency-wait survives the cases without PDL"

# unjoined-side-stream sends after its call returned: only a caller that
# reuses its inputs at once (the reuse cases) sees it; every other case misses it.
host_selftest reuse 0 reuse unjoined-side-stream --json "$work/reuse.json"
python3 - "$work/reuse.json" <<'PY' || { cat "$work/reuse.txt"; fail "unjoined-side-stream: see above"; }
import json, sys
m = json.load(open(sys.argv[1]))["mutants"][0]
assert m["name"] == "unjoined-side-stream" and m["verdict"] == "detected", m
assert m["family"] == "input-reuse", m["family"]
assert m["strict"]["how"] == "mismatch", m["strict"]["how"]
# Graph batches join the side stream (a capture insists): only the others catch it.
print(f"ok   unjoined-side-stream: {m['strict']['num_caught']} of {m['strict']['num_run']} reuse cases")
PY
host_selftest noreuse 1 '^((?!reuse).)*$' unjoined-side-stream
survives noreuse unjoined-side-stream protocol
echo "ok   unjoined-side-stream is caught by the reuse cases only"

# global-recv-buffers (state shared by the kernel contexts of one process) is
# reached only by the two-contexts cases: caught there, survives every other.
host_selftest ctx2 0 ctx2 global-recv-buffers
grep -q "global-recv-buffers (protocol): detected" "$work/ctx2.txt" ||
  { cat "$work/ctx2.txt"; fail "global-recv-buffers is not detected by the ctx2 cases"; }
host_selftest noctx2 1 '^((?!ctx2).)*$' global-recv-buffers
survives noctx2 global-recv-buffers protocol
echo "ok   global-recv-buffers caught by the ctx2 cases only"

# unbounded-init-handshake (init waits for its peers without a bound) is
# reached only by a failed peer init: the initfail cases catch it (a hang in
# init, named as such), the initlate ones and every other survive it.
host_selftest initfail 0 initfail unbounded-init-handshake --timeout 2 --json "$work/initfail.json"
python3 - "$work/initfail.json" <<'PY' || fail "the init hang is not diagnosed as such"
import json, sys
m = json.load(open(sys.argv[1]))["mutants"][0]
msg = m["strict"]["first_message"]
assert m["strict"]["how"] == "hang", m["strict"]["how"]
assert "(init)" in msg and "initfail" in msg, msg
PY
host_selftest noinitfail 1 '^((?!initfail).)*$' unbounded-init-handshake --timeout 2
survives noinitfail unbounded-init-handshake protocol
echo "ok   unbounded-init-handshake caught by the initfail cases only, as a hang in init"

# An unknown mutant name is bad usage: exit 2 with a message naming it.
"$bin" selftest --backend host --world 2 --geometry tiny --suite smoke --mutants no-such \
  >"$work/usage.txt" 2>&1
rc=$?
cat "$work/usage.txt"
[ "$rc" -eq 2 ] || fail "unknown mutant exited $rc, want 2"
grep -q "no-such" "$work/usage.txt" || fail "usage error does not name the unknown mutant"
echo "PASS"
