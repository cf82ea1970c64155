#!/usr/bin/env bash
# replay --dump on the host backend: the case's tensors come out as .npy with
# a manifest, and docs/dump_check.py (NumPy) recomputes the combine in float64
# and agrees with dcp-check's reference and mismatch mask:
# - the test host plugin (tests/plugins) on a masked (empty-shard) bf16 case;
# - the built-in host model on a base-e case, correct, then with its
#   no-base-conversion mutant (exit 1, a non-empty mismatch mask that NumPy
#   reproduces);
# - a tampered reference is caught by the script (it can fail);
# - --dump with --repeat, and into a directory that holds a dump: exit 2.
# Needs NumPy: without it, skipped by name (exit 77).
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SCRIPT=$HERE/../docs/dump_check.py
PLUGINS=$(cd "$(dirname "$BIN")/../tests/plugins" && pwd)
PY=""
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import numpy' 2>/dev/null; then PY=$py; break; fi
done
if [[ -z $PY ]]; then
  echo "SKIPPED: e2e_dump: NumPy is not installed (python3-numpy; ci/install_deps.sh installs it)"
  exit 77
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=tests/expect_lib.bash
source "$HERE/expect_lib.bash"

pick() {  # pick REGEX: the first smoke/default case id at world 2 (tiny) matching REGEX
  { "$BIN" list --world 2 --geometry tiny --suite smoke; "$BIN" list --world 2 --geometry tiny; } |
    grep -E -- "$1" | head -n 1
}

dump_and_check() {  # dump_and_check NAME WANT_RC TOKEN ARGS...
  local name=$1 want=$2 token=$3
  shift 3
  expect "$want" "replay --dump ($name)" -- replay "$token" --backend host --dump "$WORK/$name" "$@"
  grep -q "^dump: .* tensors of 2 ranks in $WORK/$name/manifest.json" "$WORK/out" ||
    fail "$name: no 'dump: N tensors of 2 ranks' line"
  if "$PY" "$SCRIPT" "$WORK/$name" >"$WORK/$name.check" 2>&1; then
    echo "ok   dump_check.py agrees ($name): $(tail -n 1 "$WORK/$name.check")"
  else
    fail "dump_check.py on $name"
    sed 's/^/    /' "$WORK/$name.check" | tail -n 15
  fi
}

MASKED=$(pick '-bf16-.*-empty(one|all|random|spec)-')
[[ -n $MASKED ]] || MASKED=$(pick '-empty(one|all|random|spec)-')
BASE_E=$(pick '-basee-')
# Every row with two live sources: the mutant's wrong weights reach the outputs.
FULL=$(pick '-basee-.*-emptynone-')
[[ -n $FULL ]] || FULL=$BASE_E
[[ -n $MASKED && -n $BASE_E ]] || { echo "FAIL: no masked or base-e case listed"; exit 1; }
echo "cases: $MASKED, $BASE_E, $FULL"

dump_and_check plugin 0 "w2-$MASKED" --kernel "$PLUGINS/libdcp_host_plugin.so"
"$PY" - "$WORK/plugin" <<'PY' || fail "plugin dump: manifest and files"
import json, pathlib, sys
import numpy as np
d = pathlib.Path(sys.argv[1])
m = json.loads((d / "manifest.json").read_text())
assert m["status"] == "pass" and m["missing_ranks"] == [], m["status"]
assert [r["rank"] for r in m["ranks"]] == [0, 1]
names = {t["name"] for r in m["ranks"] for t in r["tensors"]}
need = {"partial_output", "partial_lse", "seq_lens", "query_start_loc", "output", "reference",
        "tolerance", "mismatch"}
assert need <= names, need - names
for r in m["ranks"]:
    for t in r["tensors"]:
        a = np.load(d / t["file"])
        assert list(a.shape) == t["shape"], (t["file"], a.shape, t["shape"])
        assert a.dtype.str == t["npy_dtype"], (t["file"], a.dtype.str, t["npy_dtype"])
        if t["name"] == "output":
            assert t["shape"] == [t["call_tokens"], m["heads_per_rank"], m["head_dim"]]
        if t["name"] == "mismatch":
            assert not a.any(), t["file"]
print("ok   plugin dump: every .npy has the manifest's shape and dtype; no mismatch")
PY
ls "$WORK/plugin"/rank*.json >/dev/null 2>&1 && fail "rank fragments left beside the manifest"

dump_and_check model 0 "w2-$BASE_E"
dump_and_check mutant 1 "w2-$FULL" --mutant no-base-conversion
"$PY" - "$WORK/mutant" <<'PY' || fail "mutant dump: the mismatch mask is not empty and the case failed"
import json, pathlib, sys
import numpy as np
d = pathlib.Path(sys.argv[1])
m = json.loads((d / "manifest.json").read_text())
assert m["status"] == "fail", m["status"]
bad = sum(int(np.load(d / t["file"]).sum()) for r in m["ranks"] for t in r["tensors"]
          if t["name"] == "mismatch")
assert bad > 0, "no output mismatch dumped for a failing case"
print(f"ok   mutant dump: {bad} mismatching output elements dumped, case {m['status']}")
PY

# The script can fail: a reference moved by 1% disagrees with NumPy.
"$PY" - "$WORK/model" <<'PY'
import json, pathlib, sys
import numpy as np
d = pathlib.Path(sys.argv[1])
m = json.loads((d / "manifest.json").read_text())
t = next(t for r in m["ranks"] for t in r["tensors"] if t["name"] == "reference")
a = np.load(d / t["file"])
np.save(d / t["file"], a * 1.01 + 1e-3)
PY
if "$PY" "$SCRIPT" "$WORK/model" >"$WORK/tampered.check" 2>&1; then
  fail "dump_check.py passed a tampered reference"
else
  if grep -q "DISAGREE" "$WORK/tampered.check"; then
    echo "ok   a tampered reference is caught"
  else
    fail "tampered: no DISAGREE line"
  fi
fi

expect 2 "--dump with --repeat 2" -- replay "w2-$BASE_E" --backend host --dump "$WORK/r" --repeat 2
expect 2 "--dump into a directory holding a dump" -- replay "w2-$BASE_E" --backend host --dump "$WORK/plugin"

echo "$failures failures"
[[ $failures -eq 0 ]]
