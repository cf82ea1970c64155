#!/usr/bin/env bash
# `stress` and `shrink` end to end on the host backend:
# - a correct kernel: N random scenarios pass, with calls/s reported;
# - a deliberately broken variant (hidden test-only --mutant: base-e LSEs not
#   converted, so only some scenarios fail): stress finds it, prints a replay
#   line, the replay reproduces it (exit 1), shrinking reduces it (>= 1 step)
#   to a case whose own replay still fails, and the failure bundle is complete;
# - `shrink <token>`: 1 on a failing case, 0 on a passing one, 2 on a bad token;
# - bad flags exit 2.
# Usage: e2e_stress_host.sh /path/to/dcp-check
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
COMMON=(--backend host --world 2 --geometry tiny)
MUTANT=no-base-conversion

# 1. A correct kernel passes 30 random scenarios and reports its rate.
timeout 120 "$BIN" stress "${COMMON[@]}" --iterations 30 --seed 1 >"$WORK/pass.out" 2>&1
rc=$?
cat "$WORK/pass.out"
[[ $rc -eq 0 ]] && ok "stress on the correct kernel exits 0" || fail "stress exited $rc, want 0"
grep -q 'calls/s' "$WORK/pass.out" || fail "no calls/s in the output"
grep -q '^PASS: 30 scenarios' "$WORK/pass.out" || fail "no 'PASS: 30 scenarios' summary"
grep -q '^seed 0x0000000000000001' "$WORK/pass.out" || fail "the seed is not printed"

# A drawn scenario the host cannot run (seed 5 draws one with SM pressure) is
# skipped and said so, never counted as a pass.
timeout 120 "$BIN" stress "${COMMON[@]}" --iterations 30 --seed 5 --json "$WORK/skip.json" \
  >"$WORK/skip.out" 2>&1
rc=$?
if [[ $rc -eq 0 ]] && grep -q '^1 scenario skipped, the first: not run: SM pressure' "$WORK/skip.out" &&
  python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["stress"]["num_skipped"] == 1' \
    "$WORK/skip.json"; then
  ok "a scenario the host cannot run is reported skipped"
else
  cat "$WORK/skip.out"
  fail "the skipped scenario is not reported (exit $rc)"
fi

# Per-rank phases in the report: every rank, each with the worker's CPU time
# (cpu_ms > 0: the check alone costs CPU) and its serial phases.
python3 - "$WORK/skip.json" <<'PY' && ok "the report's phases name every rank and its CPU time" ||
import json, sys
p = json.load(open(sys.argv[1]))["phases"]
ranks = p["per_rank"]
assert sorted(r["rank"] for r in ranks) == [0, 1], ranks
assert all(r["cpu_ms"] > 0 and r["check_ms"] > 0 and r["capture_ms"] == 0 for r in ranks), ranks
assert p["bound_by"], p
PY
  fail "the report's phases lack a rank or its CPU time"

# Without --seed a random seed is chosen and printed so the run can be redone.
timeout 60 "$BIN" stress "${COMMON[@]}" --iterations 2 >"$WORK/rand.out" 2>&1 ||
  fail "stress without --seed exited $?"
grep -Eq '^seed 0x[0-9a-f]{16} \(random' "$WORK/rand.out" && ok "random seed printed" ||
  fail "no random seed line"

# 2. The broken variant: stress stops at the first failure and shrinks it.
# (Seed 7 passes a few scenarios first: the bug needs base-e LSEs.)
timeout 240 "$BIN" stress "${COMMON[@]}" --iterations 200 --seed 7 --mutant "$MUTANT" \
  --save-failures "$WORK/bundles" --json "$WORK/stress.json" >"$WORK/bug.out" 2>&1
rc=$?
cat "$WORK/bug.out"
[[ $rc -eq 1 ]] && ok "stress finds the bug (exit 1)" || fail "stress with a mutant exited $rc, want 1"
replay=$(grep -m1 -E '^  dcp-check replay w2-' "$WORK/bug.out" | sed 's/^ *//')
[[ -n "$replay" ]] && ok "replay line: $replay" || fail "no replay line printed"
[[ "$replay" == *"--backend host"* && "$replay" == *"--mutant $MUTANT"* ]] ||
  fail "the replay line lacks the flags that ran: $replay"
steps=$(sed -nE 's/^shrunk: ([0-9]+) steps?,.*/\1/p' "$WORK/bug.out" | head -n 1)
[[ -n "$steps" && "$steps" -ge 1 ]] && ok "shrunk in $steps steps" || fail "no shrink step taken"
minimal=$(grep -A3 '^minimal failing case:' "$WORK/bug.out" | grep -m1 -E '^  dcp-check replay' |
  sed 's/^ *//')
[[ -n "$minimal" && "$minimal" != "$replay" ]] || fail "no minimal replay line different from the original"

# The replay lines reproduce the failure in fresh processes (argv from the line).
for line in "$replay" "$minimal"; do
  read -r -a argv <<<"${line#dcp-check }"
  timeout 60 "$BIN" "${argv[@]}" >"$WORK/replay.out" 2>&1
  rc=$?
  [[ $rc -eq 1 ]] && ok "replay reproduces: ${argv[1]}" ||
    { fail "replay exited $rc, want 1: $line"; tail -5 "$WORK/replay.out"; }
done
# And the minimal case passes on the correct kernel: the failure is the bug's.
read -r -a argv <<<"${minimal#dcp-check }"
timeout 60 "$BIN" "${argv[@]:0:4}" >"$WORK/clean.out" 2>&1 &&
  ok "minimal case passes without the mutant" || fail "minimal case fails on the correct kernel"

python3 - "$WORK/stress.json" "$WORK/bundles" "$MUTANT" <<'PY' || failures=$((failures + 1))
import json, os, sys
report, bundles, mutant = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
s = report["stress"]
assert report["command"] == "stress" and report["exit_code"] == 1, report["exit_code"]
assert s["seed"] == "0x0000000000000007", s["seed"]
assert len(s["failures"]) == 1, s
f = s["failures"][0]
# It stopped at the first failure: every earlier scenario passed.
assert s["num_scenarios"] == f["index"] + 1, (s["num_scenarios"], f["index"])
assert f["shrunk"]["num_steps"] >= 1 and f["shrunk"]["replay"].endswith(mutant), f
files = os.listdir(bundles)
assert files == [f["case_id"] + ".json"], files
b = json.load(open(os.path.join(bundles, files[0])))
for key in ("scenario", "seed", "world", "backend", "impl", "replay", "first_mismatches",
            "environment", "shrunk", "stress_seed", "stress_index"):
    assert key in b, f"bundle lacks {key}"
assert b["scenario"]["id"] == f["case_id"] and b["world"] == 2 and b["backend"] == "host"
assert b["scenario"]["lse_base"] == "e", b["scenario"]  # the mutant's bug needs base e
assert len(b["first_mismatches"]) >= 1 and b["replay"] == f["replay"]
env = b["environment"]
assert env["dcp_version"] and env["git_revision"] and env["backend"] == "host", env
print("ok   JSON report and failure bundle:", files[0])
PY

# 3. --keep-going runs every iteration and records every failure.
timeout 240 "$BIN" stress "${COMMON[@]}" --iterations 12 --seed 3 --mutant "$MUTANT" \
  --keep-going --no-shrink >"$WORK/keep.out" 2>&1
rc=$?
nfail=$(grep -c -E '^FAIL scenario #' "$WORK/keep.out")
[[ $rc -eq 1 && "$nfail" -ge 2 ]] && grep -q '^FAIL: 12 scenarios' "$WORK/keep.out" &&
  ok "--keep-going: $nfail failures in 12 scenarios" ||
  { fail "--keep-going exited $rc with $nfail failures"; tail -5 "$WORK/keep.out"; }
grep -q '^shrinking' "$WORK/keep.out" && fail "--no-shrink still shrank"

# 4. `shrink <token>`: the token of the stress failure.
token=$(echo "$replay" | awk '{print $3}')
timeout 120 "$BIN" shrink "$token" --backend host --mutant "$MUTANT" >"$WORK/shrink.out" 2>&1
rc=$?
cat "$WORK/shrink.out"
[[ $rc -eq 1 ]] && ok "shrink on a failing case exits 1" || fail "shrink exited $rc, want 1"
grep -Eq '^shrunk: [1-9][0-9]* step' "$WORK/shrink.out" || fail "shrink took no step"
grep -q '^minimal failing case: ' "$WORK/shrink.out" || fail "shrink printed no minimal case"
timeout 60 "$BIN" shrink "$token" --backend host >"$WORK/shrink0.out" 2>&1
rc=$?
[[ $rc -eq 0 ]] && grep -q 'nothing to shrink' "$WORK/shrink0.out" &&
  ok "shrink on a passing case exits 0" || fail "shrink on a passing case exited $rc"
"$BIN" shrink w2-not-a-case --backend host >"$WORK/bad.out" 2>&1
rc=$?
[[ $rc -eq 2 ]] && ok "shrink with a bad token exits 2" || fail "bad token exited $rc, want 2"

# 5. Overlap across scenarios: each scenario is sent ahead, so a worker checks
# the last calls of one while it runs the next. A fault still lands on its own
# scenario: a wrong last call (checked beside the next scenario), a hang and a
# crash (while the previous scenario's result may still be on its way). Kimi outputs are
# big enough to be checked on the side (tiny ones are checked inline).
KIMI=(--backend host --world 2 --geometry kimi --iterations 6 --seed 1 --no-shrink)
for fault in corrupt:1:3:999 hang:1:3:0 crash:1:3:0; do
  timeout 120 "$BIN" stress "${KIMI[@]}" --timeout 2 --inject-fault "$fault" \
    --json "$WORK/ahead.json" >"$WORK/ahead.out" 2>&1
  rc=$?
  python3 - "$WORK/ahead.json" "${fault%%:*}" <<'PY' && ok "stress: $fault fails scenario 3, not its neighbours" ||
import json, sys
r, kind = json.load(open(sys.argv[1])), sys.argv[2]
s = r["stress"]
assert s["num_scenarios"] == 4 and [f["index"] for f in s["failures"]] == [3], s
# A neighbour may be left unjudged (its last check still ran when the next
# scenario's rank died), never failed.
bad = [c for c in r["cases"] if c["status"] != "pass" and not (
    c["status"] == "skipped" and c["message"].startswith("not checked to the end"))]
assert len(bad) == 1 and bad[0]["id"] == s["failures"][0]["case_id"], bad
want = {"corrupt": ("fail", "mismatch"), "hang": ("error", "hang"),
        "crash": ("error", "worker-died")}[kind]
assert (bad[0]["status"], bad[0]["failure_type"]) == want, (bad[0]["status"], bad[0]["failure_type"])
PY
    { fail "stress $fault (exit $rc)"; tail -5 "$WORK/ahead.out"; }
done

# A run that stops by time leaves scenarios sent ahead: the workers finish them
# and obey the shutdown message (none is killed at the deadline; a shutdown
# read ahead behind a case once went unseen).
timeout 120 "$BIN" stress --backend host --world 2 --geometry kimi --duration 2s --seed 11 \
  --json "$WORK/stop.json" >"$WORK/stop.out" 2>&1
rc=$?
python3 - "$WORK/stop.json" <<'PY' && ok "stress stopped by time: every worker exited on shutdown" ||
import json, sys
t = json.load(open(sys.argv[1]))["environment"]["teardown"]
assert t["workers_killed"] == 0, t
PY
  { fail "stress --duration 2s (exit $rc): workers killed at shut-down"; tail -3 "$WORK/stop.out"; }

# 6. Bad flags are usage errors, reported before anything runs.
for args in "--duration 10x" "--duration 0" "--iterations 0" "--seed nope" \
  "--save-failures /proc/no-such-dir/x" "--shrink-time -1s"; do
  read -r -a extra <<<"$args"
  "$BIN" stress "${COMMON[@]}" "${extra[@]}" >"$WORK/usage.out" 2>&1
  rc=$?
  [[ $rc -eq 2 ]] && ok "stress $args -> 2" || { fail "stress $args exited $rc, want 2"; cat "$WORK/usage.out"; }
done

echo "$failures failures"
[[ $failures -eq 0 ]]
