#!/usr/bin/env bash
# Replay determinism on random stress scenarios (host backend): the same token
# run twice in fresh processes gives identical output hashes on every rank
# (read from --json), for the correct kernel (passing) and for a broken
# variant (failing the same way, bit for bit); the hash does depend on the
# output (correct and broken differ). `stress --check-determinism` passes.
# Stress scenarios mix skew, pipelining, graphs, two slots and wrapping epochs,
# so this covers more of the call sequence than a suite case.
# Usage: e2e_replay_determinism.sh /path/to/dcp-check
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
MUTANT=no-base-conversion

# Tokens: the failing scenarios of a --keep-going stress run against the
# mutant (about half of all scenarios: those with base-e LSEs).
timeout 240 "$BIN" stress --backend host --world 4 --geometry tiny --iterations 16 --seed 3 \
  --mutant "$MUTANT" --keep-going --no-shrink --json "$WORK/stress.json" >"$WORK/stress.out" 2>&1
rc=$?
[[ $rc -eq 1 ]] || { fail "stress exited $rc, want 1"; tail -5 "$WORK/stress.out"; }
mapfile -t tokens < <(python3 -c "
import json, sys
for f in json.load(open(sys.argv[1]))['stress']['failures'][:4]:
    print(f['replay'].split()[2])" "$WORK/stress.json")
[[ ${#tokens[@]} -ge 2 ]] && ok "${#tokens[@]} scenario tokens" || fail "only ${#tokens[@]} tokens"

run_replay() {  # token, json path, extra flags...
  local token=$1 json=$2
  shift 2
  timeout 120 "$BIN" replay "$token" --backend host --json "$json" "$@" >"$json.out" 2>&1
}

for token in "${tokens[@]}"; do
  run_replay "$token" "$WORK/c1.json"; rc1=$?
  run_replay "$token" "$WORK/c2.json"; rc2=$?
  run_replay "$token" "$WORK/m1.json" --mutant "$MUTANT"; rm1=$?
  run_replay "$token" "$WORK/m2.json" --mutant "$MUTANT"; rm2=$?
  [[ "$rc1 $rc2 $rm1 $rm2" == "0 0 1 1" ]] ||
    { fail "$token: exit codes $rc1 $rc2 (correct) $rm1 $rm2 (mutant), want 0 0 1 1"; continue; }
  python3 - "$token" "$WORK"/c1.json "$WORK"/c2.json "$WORK"/m1.json "$WORK"/m2.json <<'PY' ||
import json, sys
token, paths = sys.argv[1], sys.argv[2:]
def hashes(path, status):
    case = json.load(open(path))["cases"][0]
    assert case["status"] == status, (path, case["status"])
    ranks = sorted(case["ranks"], key=lambda r: r["rank"])
    assert len(ranks) == 4, f"{len(ranks)} ranks"
    return [r["output_hash"] for r in ranks]
c1, c2 = hashes(paths[0], "pass"), hashes(paths[1], "pass")
m1, m2 = hashes(paths[2], "fail"), hashes(paths[3], "fail")
assert c1 == c2, f"correct kernel: hashes differ between replays: {c1} vs {c2}"
assert m1 == m2, f"broken kernel: hashes differ between replays: {m1} vs {m2}"
assert c1 != m1, "correct and broken outputs hash the same: the hash ignores the output"
print(f"ok   {token[:60]}...: identical hashes across replays")
PY
    failures=$((failures + 1))
done

# The same scenarios, each run twice inside one stress run, must agree too.
timeout 240 "$BIN" stress --backend host --world 4 --geometry tiny --iterations 16 --seed 3 \
  --check-determinism >"$WORK/det.out" 2>&1
rc=$?
[[ $rc -eq 0 ]] && grep -q 'check-determinism' "$WORK/det.out" &&
  ok "stress --check-determinism passes 16 scenarios" ||
  { fail "stress --check-determinism exited $rc"; tail -8 "$WORK/det.out"; }

echo "$failures failures"
[[ $failures -eq 0 ]]
