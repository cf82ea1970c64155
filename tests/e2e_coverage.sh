#!/usr/bin/env bash
# Suites generated from a plugin's declaration (docs/DESIGN.md, "Suites from
# the declaration"): `list --coverage` of the declaration-only host plugin
# variants covers 100% of the allowed pairs at world 2 and 4, one GPU per rank
# and shared (--gpus 1, where needs-coresident forbids two slots in flight);
# the special-LSE cases a fp32-LSE-only, no-masking, needs-coresident kernel
# can run are in its suite; a host run of that kernel passes with the new
# suite and its JSON report holds the coverage; bad flags are one-line usage
# errors (exit 2).
set -u
BIN=$(realpath "${1:?usage: $0 path/to/dcp-check}")
PLUGINS=$(cd "$(dirname "$BIN")/../tests/plugins" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

for variant in "" _fp32_lse_only _no_masking _needs_coresident _constrained; do
  lib="$PLUGINS/libdcp_host_plugin$variant.so"
  for world in 2 4; do
    for gpus in "" "--gpus 1"; do
      # shellcheck disable=SC2086
      if ! "$BIN" list --kernel "$lib" --coverage --world "$world" $gpus >"$WORK/cov" 2>&1; then
        fail "list --coverage${variant:+ $variant} --world $world $gpus exited non-zero"
        sed 's/^/    /' "$WORK/cov" | tail -5
        continue
      fi
      total=$(grep '^coverage: ' "$WORK/cov")
      echo "ok   host_plugin${variant} world $world ${gpus:-one GPU per rank}: $total"
      [[ $total =~ ^coverage:\ ([0-9]+)\ of\ ([0-9]+)\ allowed\ pairs\ covered\ \(100\.0%\) ]] ||
        fail "not every allowed pair covered: $total"
      [[ ${BASH_REMATCH[1]:-0} -gt 0 ]] || fail "no pair allowed: $total"
      if [[ $variant == _needs_coresident || $variant == _constrained ]] && [[ -n $gpus ]]; then
        grep -q 'slots=2.*needs-coresident\|needs-coresident.*slots=2\|mode=.* x slots=2: .*needs-coresident' \
          "$WORK/cov" || fail "no impossible slots x mode pair named for needs-coresident on one GPU"
      fi
      if [[ $variant == _constrained ]]; then
        grep -q '^impossible here: dcp2 lse=bf16: .*LSE dtype bf16' "$WORK/cov" ||
          fail "the impossible LSE dtype bf16 is not listed with its reason"
      fi
    done
  done
done

# The special-LSE cases (NaN, +inf) of the constrained kernel run (not skipped).
lib="$PLUGINS/libdcp_host_plugin_constrained.so"
"$BIN" list --kernel "$lib" --world 2 --gpus 1 >"$WORK/ids" 2>&1 || fail "list --kernel failed"
for special in nan posinf; do
  n=$(grep -c "special$special" "$WORK/ids" | head -1)
  k=$(grep "special$special" "$WORK/ids" | grep -vc 'skipped')
  echo "ok   constrained, world 2, one GPU: $k of $n special$special cases run"
  ((k > 0)) || fail "no special$special case runs for the constrained kernel"
done

# The constrained kernel on the host backend: the suite generated for it passes.
cd "$WORK" || exit 1
start=$SECONDS
timeout 280 "$BIN" run --backend host --world 2 --geometry tiny --kernel "$lib" --json run.json \
  >run.out 2>run.err </dev/null
rc=$?
if [[ $rc -ne 0 ]]; then
  fail "run --backend host --kernel constrained exited $rc"
  tail -n 15 run.out | sed 's/^/    /'
  tail -n 5 run.err | sed 's/^/    /'
else
  echo "ok   ($((SECONDS - start)) s) run --backend host --kernel constrained: $(tail -n 1 run.out)"
  python3 - run.json <<'PY' || failures=$((failures + 1))
import json, sys
j = json.load(open(sys.argv[1]))
cov = j["coverage"]
assert cov["allowed"] > 0 and cov["covered"] == cov["allowed"], cov["covered"]
assert sum(p["allowed"] for p in cov["pairs"]) == cov["allowed"]
assert all(i["reason"] for i in cov["impossible_items"])
c = j["counts"]
print(f"ok   run.json: coverage {cov['covered']}/{cov['allowed']} ({cov['impossible']} impossible), "
      f"{c['passed']} passed, {c['skipped']} skipped of {c['total']}")
PY
fi

# Bad session facts: one line on stderr, exit 2.
for bad in "--gpus 0" "--gpus -1" "--backend tpu"; do
  # shellcheck disable=SC2086
  "$BIN" list --coverage $bad >"$WORK/out" 2>"$WORK/err"
  rc=$?
  [[ $rc -eq 2 && $(grep -c . "$WORK/err") -eq 1 ]] ||
    fail "list --coverage $bad: exit $rc, stderr: $(cat "$WORK/err")"
done

echo "$failures failures"
((failures == 0))
