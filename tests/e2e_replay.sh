#!/usr/bin/env bash
# Replay on the host backend: a listed case replays and passes; replaying the
# same token twice gives bit-identical outputs (output hashes from --json);
# --repeat K reports K runs with identical hashes.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A multi-call case with two slots exercises parity and slot state in replay.
ID=$("$BIN" list --world 4 --geometry tiny --suite smoke | grep -- '-ub2-' | head -n 1)
[[ -n "$ID" ]] || ID=$("$BIN" list --world 4 --geometry tiny --suite smoke | head -n 1)
[[ -n "$ID" ]] || { echo "FAIL: list printed no case"; exit 1; }
TOKEN="w4-$ID"
echo "token: $TOKEN"

for k in 1 2; do
  timeout 120 "$BIN" replay "$TOKEN" --backend host --json "$WORK/r$k.json" >"$WORK/out$k" 2>&1
  rc=$?
  [[ $rc -eq 0 ]] || { fail "replay run $k exited $rc"; sed 's/^/    /' "$WORK/out$k" | tail -15; }
done

python3 - "$WORK/r1.json" "$WORK/r2.json" "$ID" <<'PY' || failures=$((failures + 1))
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
case_id = sys.argv[3]
def hashes(report):
    assert report["command"] == "replay", report["command"]
    assert len(report["cases"]) == 1, len(report["cases"])
    case = report["cases"][0]
    assert case["id"] == case_id, (case["id"], case_id)
    assert case["status"] == "pass", case["status"]
    ranks = sorted(case["ranks"], key=lambda r: r["rank"])
    assert len(ranks) == 4, f"{len(ranks)} rank results, want 4"
    return [r["output_hash"] for r in ranks]
ha, hb = hashes(a), hashes(b)
assert ha == hb, f"output hashes differ between replays: {ha} vs {hb}"
assert any(h != 0 for h in ha), "all output hashes are 0: nothing was hashed"
print("ok   two replays, identical output hashes:", [hex(h) for h in ha])
PY

timeout 120 "$BIN" replay "$TOKEN" --backend host --repeat 3 --json "$WORK/rep.json" >"$WORK/rep.out" 2>&1
rc=$?
[[ $rc -eq 0 ]] || { fail "replay --repeat 3 exited $rc"; tail -15 "$WORK/rep.out"; }
grep -q 'repeat: 0 of 3 runs failed; output hashes identical' "$WORK/rep.out" ||
  fail "replay --repeat 3 did not report 3 clean, identical runs"
python3 -c "
import json,sys
r=json.load(open('$WORK/rep.json'))['repeat']
assert r=={'runs':3,'failed_runs':0,'hashes_identical':True}, r
print('ok   --repeat 3:', r)" || failures=$((failures + 1))

echo "$failures failures"
[[ $failures -eq 0 ]]
