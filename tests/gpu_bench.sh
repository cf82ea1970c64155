#!/usr/bin/env bash
# `dcp-check bench` on the GPU. On a machine with fewer GPUs than ranks:
# - `bench --world 2` exits 2 and says the ranks share a GPU;
# - `bench --world 2 --impl stock --allow-shared-gpu` exits 2 (NCCL: one GPU per rank);
# - `bench --world 2 --allow-shared-gpu --tokens 1,8 --repeats 2 --replays 5`
#   exits 0, says stock was skipped, and labels every number not meaningful
#   (table, JSON "meaningful": false, CSV column);
# - the same with a known-broken kernel (--mutant) exits 1: the output check
#   after timing is real.
# With one GPU per rank (2+ GPUs): `bench --world 2 --tokens 1,8` exits 0 with
# stock and direct numbers, meaningful.
# No GPU: exit 77.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "SKIPPED: gpu_bench: no GPU on this machine"
  exit 77
fi
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
pass() { echo "PASS: $*"; }
fail() {
  echo "FAIL: $*"
  tail -20 "$WORK/out" | sed 's/^/    out: /'
  tail -5 "$WORK/err" | sed 's/^/    err: /'
  failures=$((failures + 1))
}
run() {  # run SECONDS ARGS...
  local t=$1
  shift
  timeout "$t" "$BIN" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
  rc=$?
}
QUICK=(--tokens 1,8 --repeats 2 --replays 5)

if ((NGPU < 2)); then
  run 120 bench --world 2 "${QUICK[@]}"
  [[ $rc -eq 2 ]] && grep -q "share a GPU" "$WORK/err" &&
    pass "shared GPU: bench refuses (exit 2)" || fail "shared GPU refusal (exit $rc)"
  run 120 bench --world 2 --impl stock --allow-shared-gpu "${QUICK[@]}"
  [[ $rc -eq 2 ]] && grep -q "one GPU per rank" "$WORK/err" &&
    pass "shared GPU: --impl stock refused (exit 2)" || fail "stock refusal (exit $rc)"
  run 300 bench --world 2 --allow-shared-gpu "${QUICK[@]}" --json "$WORK/b.json" --csv "$WORK/b.csv"
  if [[ $rc -ne 0 ]]; then
    fail "bench --allow-shared-gpu exits $rc"
  else
    pass "bench --allow-shared-gpu runs end to end"
    grep -q "NOT MEANINGFUL" "$WORK/out" && pass "table labelled not meaningful" ||
      fail "table not labelled"
    grep -q "stock skipped" "$WORK/out" && pass "says stock was skipped" || fail "no stock note"
    python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["meaningful"] is False' \
      "$WORK/b.json" && pass "JSON meaningful: false" || fail "JSON not labelled"
    [[ $(grep -c ',direct,.*,pass,false,' "$WORK/b.csv") -eq 2 ]] &&
      pass "CSV: 2 direct rows, checked, meaningful=false" || fail "CSV rows: $(cat "$WORK/b.csv")"
  fi
  run 300 bench --world 2 --allow-shared-gpu --tokens 8 --repeats 2 --replays 5 --mutant last-rank-head-off-by-one
  [[ $rc -eq 1 ]] && grep -q "output check FAILED" "$WORK/out" &&
    pass "a broken kernel fails the bench's output check (exit 1)" ||
    fail "mutant bench exits $rc (want 1)"
else
  run 300 bench --world 2 "${QUICK[@]}" --json "$WORK/b.json"
  # The JSON, parsed: meaningful, and stock timed for some token count.
  if [[ $rc -eq 0 ]] && python3 - "$WORK/b.json" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
assert d["meaningful"] is True, d["meaningful"]
assert any(isinstance(row["stock_us"], (int, float)) for row in d["table"]), d["table"]
PY
    pass "distinct GPUs: stock and direct timed, meaningful"
  else
    fail "distinct-GPU bench (exit $rc)"
  fi
fi
exit $((failures > 0))
