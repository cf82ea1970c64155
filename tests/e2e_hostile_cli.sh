#!/usr/bin/env bash
# Hostile command lines: every malformed invocation must exit 2 within a second
# with exactly one line on stderr that names the problem, and nothing that
# looks like a crash. Table-driven: "<word the message must contain>|<args>".
# Every `run` row passes --backend host, so a validation we forgot would show
# up as a run that starts (exit 0/1), not as the GPU-missing exit 2.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
H="--backend host --geometry tiny --suite smoke"

# A real case id, so replay rows differ from a valid token in one way only.
ID=$("$BIN" list --world 2 --geometry tiny --suite smoke | head -n 1)
if [[ -z "$ID" ]]; then echo "FAIL: 'list' printed no case id"; exit 1; fi
BAD_T_ID=$(sed -E 's/-t[0-9]+-/-t0-/' <<<"$ID")
DCP4_ID=$(sed -E 's/^dcp2-/dcp4-/' <<<"$ID")
touch "$WORK/file"

CASES=(
  "geometry|--geometry nosuch --backend host"
  "suite|--backend host --geometry tiny --suite nosuch"
  "world|$H --world 0"
  "world|$H --world 1"
  "world|$H --world 9"
  "world|$H --world 4096"
  "world|$H --world abc"
  "world|$H --world 4.5"
  "world|$H --world"
  "world|$H --world -3"
  "head-dim|$H --head-dim 100"
  "head-dim|$H --head-dim 2048"
  "head-dim|$H --head-dim 0"
  "heads-per-rank|$H --heads-per-rank 0"
  "heads-per-rank|$H --heads-per-rank 129"
  "heads-per-rank|$H --heads-per-rank 12abc"
  "max-tokens|$H --max-tokens 0"
  "max-tokens|$H --max-tokens 5000"
  "max-tokens|$H --max-tokens 1e3"
  "storage|--backend host --geometry kimi-k3 --world 8 --heads-per-rank 32"
  "seed|$H --seed xyz"
  "seed|$H --seed -1"
  "seed|$H --seed 0x"
  "verbose|$H -q -v"
  "json|$H --json /nonexistent-dir/out.json"
  "junit|$H --junit /proc/dcp-check-test.xml"
  "json|$H --json /proc/version"
  "junit|$H --junit /proc/self/status"
  "json|$H --json $WORK"
  "junit|$H --junit $WORK/file/x.xml"
  "junit|$H --json $WORK/same --junit $WORK/same"
  "filter|$H --filter '('"
  "filter|$H --filter 'no-such-case-anywhere'"
  "timeout|$H --timeout 0"
  "timeout|$H --timeout -5"
  "timeout|$H --timeout abc"
  "timeout|$H --timeout nan"
  "mps|$H --mps sometimes"
  "mps|$H --mps on"
  "impl|$H --impl fast"
  "backend|--geometry tiny --backend tpu"
  "inject-fault|$H --inject-fault corrupt:9:0:0"
  "inject-fault|$H --inject-fault explode:0:0:0"
  "inject-fault|$H --inject-fault corrupt:1"
  "inject-fault|$H --inject-fault corrupt:x:0:0"
  "inject-fault|$H --inject-fault corrupt:1:-1:0"
  "frobnicate|frobnicate --world 2"
  "frobnicate|$H --frobnicate"
  "not expected|run $H extra-positional"
  "token|replay --backend host"
  "replay token|replay garbage --backend host"
  "replay token|replay w4- --backend host"
  "replay token|replay w99-$ID --backend host"
  "replay token|replay wx-$ID --backend host"
  "replay token|replay $ID --backend host"
  "replay token|replay w2-$DCP4_ID --backend host"
  "replay token|replay w2-$BAD_T_ID --backend host"
  "replay token|replay w2-${ID}-bogus --backend host"
  "repeat|replay w2-$ID --backend host --repeat 0"
  "world|list --world 1"
  "geometries|list --geometries --suites"
  "families|list --families --suites"
  "geometry|list --geometry nosuch"
)

CRASH='terminate called|what\(\)|Segmentation|Aborted|core dumped|Sanitizer|Traceback|\.cpp:[0-9]+'
failures=0
for row in "${CASES[@]}"; do
  want=${row%%|*}
  args=${row#*|}
  start=$(date +%s%N)
  eval "timeout 10 \"\$BIN\" $args" >"$WORK/out" 2>"$WORK/err" </dev/null
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  lines=$(wc -l <"$WORK/err")
  err=$(cat "$WORK/err")
  problem=""
  if [[ $rc -ne 2 ]]; then problem="exit $rc (want 2)"
  elif [[ $ms -gt 1000 ]]; then problem="took ${ms} ms (want < 1000)"
  elif [[ $lines -ne 1 ]]; then problem="$lines stderr lines (want 1)"
  elif grep -Eq "$CRASH" "$WORK/err"; then problem="looks like a crash"
  elif ! grep -qi -- "$want" "$WORK/err"; then problem="message does not mention '$want'"
  elif ! grep -q '^dcp-check: error: ' "$WORK/err"; then problem="message lacks the 'dcp-check: error:' prefix"
  fi
  if [[ -n $problem ]]; then
    echo "FAIL: dcp-check $args: $problem"
    sed 's/^/    stderr: /' "$WORK/err" | head -5
    failures=$((failures + 1))
  else
    echo "ok   ($ms ms) dcp-check $args -> $err"
  fi
done

# Help and version are not errors.
for args in "--help" "run --help" "list --help" "replay --help" "--version"; do
  if ! timeout 10 "$BIN" $args >"$WORK/out" 2>"$WORK/err" || [[ -s "$WORK/err" ]]; then
    echo "FAIL: dcp-check $args should exit 0 with nothing on stderr"; failures=$((failures + 1))
  fi
done
grep -q "Exit codes" <("$BIN" --help) || { echo "FAIL: --help lists no exit codes"; failures=$((failures + 1)); }
# The families, with their counts: the default suite has 2 capacity cases per group size.
families=$("$BIN" list --world 4 --geometry tiny --families)
for f in capacity epoch-2^31 epoch-2^32 guard-zones slow-producer producer-pdl graph-set \
  allocation-churn sm-pressure input-reuse two-contexts init-faults; do
  grep -q "^$f " <<<"$families" || { echo "FAIL: list --families lacks $f"; failures=$((failures + 1)); }
done
grep -Eq '^capacity +4 of ' <<<"$families" ||
  { echo "FAIL: list --families: want 4 capacity cases at world 4: $families"; failures=$((failures + 1)); }
# The producer cases: per group size 2 slow and 3 PDL.
grep -Eq '^producer-pdl +6 of ' <<<"$families" ||
  { echo "FAIL: list --families: want 6 producer-pdl cases at world 4: $families"; failures=$((failures + 1)); }
# A kernel without capability pdl (stock) skips the PDL producer cases by name.
skips=$("$BIN" list --world 2 --kernel stock --filter prodpdl)
grep -q "# skipped: kernel 'stock' lacks capability pdl" <<<"$skips" ||
  { echo "FAIL: list --kernel stock does not skip the PDL cases by name: $skips"; failures=$((failures + 1)); }
grep -q "^# capabilities: .*pdl" <("$BIN" list --world 2 --kernel direct --filter prodpdl) ||
  { echo "FAIL: list --kernel direct does not declare pdl"; failures=$((failures + 1)); }
# The graph-set family: per group size (4 and 2), two slot counts, T = 32 and 17.
grep -Eq '^graph-set +8 of ' <<<"$families" ||
  { echo "FAIL: list --families: want 8 graph-set cases at world 4: $families"; failures=$((failures + 1)); }
# Per group size: 2 churn cases (the two-slot graph sets), 4 init-fault cases.
grep -Eq '^allocation-churn +4 of ' <<<"$families" ||
  { echo "FAIL: list --families: want 4 allocation-churn cases at world 4: $families"; failures=$((failures + 1)); }
grep -Eq '^init-faults +8 of ' <<<"$families" ||
  { echo "FAIL: list --families: want 8 init-faults cases at world 4: $families"; failures=$((failures + 1)); }
grep -q -- "--inject-fault" <("$BIN" run --help) && { echo "FAIL: --inject-fault is not hidden"; failures=$((failures + 1)); }

echo "${#CASES[@]} malformed invocations, $failures failures"
[[ $failures -eq 0 ]]
