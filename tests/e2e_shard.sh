#!/usr/bin/env bash
# --shard K/N and `merge` end to end on the host backend:
# - run: for N = 1, 3, 7 the shards' reports merge to exactly the unsharded
#   run's case list (same order) and verdict, and one JUnit with every case;
# - the shard from the environment (Bazel's, Buildkite's), said so, and
#   TEST_SHARD_STATUS_FILE touched;
# - a failing kernel: the merged verdict and exit code are the unsharded ones;
# - stress: each shard its own seed stream; a failure's replay line
#   reproduces alone; the campaign merges;
# - merge refuses (exit 2, one line) a missing or repeated shard, and reports
#   of another world, suite, seed or kernel; bad --shard values exit 2.
# Usage: e2e_shard.sh /path/to/dcp-check
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/expect_lib.bash"
# The default suite at the tiny geometry: ~80 cases, a few skipped, in about a second.
RUN=(--backend host --world 2 --geometry tiny -q)
LOUD=(--backend host --world 2 --geometry tiny)
PLUGIN=$(cd "$(dirname "$BIN")/.." && pwd)/tests/plugins/libdcp_host_plugin.so

ids() {  # ids REPORT.json: the case ids, one per line, in report order
  python3 -c 'import json,sys; print("\n".join(c["id"] for c in json.load(open(sys.argv[1]))["cases"]))' "$1"
}
field() {  # field REPORT.json KEY
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

expect 0 "the unsharded suite" -- "${RUN[@]}" --json "$WORK/full.json"
ids "$WORK/full.json" >"$WORK/full.ids"
total=$(wc -l <"$WORK/full.ids")
[[ $total -ge 14 ]] || fail "the suite has $total cases: too few to split 7 ways"

for n in 1 3 7; do
  reports=()
  for ((k = 0; k < n; k++)); do
    expect 0 "shard $k/$n" -- "${RUN[@]}" --shard "$k/$n" --json "$WORK/s$n-$k.json"
    reports+=("$WORK/s$n-$k.json")
  done
  # Disjoint parts: no case in two shards.
  for r in "${reports[@]}"; do ids "$r"; done | sort | uniq -d >"$WORK/dup"
  [[ -s $WORK/dup ]] && fail "N=$n: cases in two shards: $(head -n 3 "$WORK/dup")"
  expect 0 "merge of the $n shards" -- merge "${reports[@]}" --json "$WORK/m$n.json" \
    --junit "$WORK/m$n.xml"
  grep -q "^PASS: $total cases: " "$WORK/out" || fail "N=$n: merge verdict: $(tail -n 1 "$WORK/out")"
  if ids "$WORK/m$n.json" | cmp -s - "$WORK/full.ids"; then
    ok "N=$n: the merged case list is the unsharded run's ($total cases, same order)"
  else
    fail "N=$n: the merged case list differs from the unsharded run's"
  fi
  [[ $(field "$WORK/m$n.json" verdict) == "$(field "$WORK/full.json" verdict)" &&
    $(field "$WORK/m$n.json" counts) == "$(field "$WORK/full.json" counts)" ]] ||
    fail "N=$n: merged verdict or counts differ"
  [[ $(grep -c '<testcase ' "$WORK/m$n.xml") -eq $total ]] || fail "N=$n: the merged JUnit lacks cases"
done

# The shard from the scheduler's variables, said so; Bazel's status file touched.
rm -f "$WORK/status"
TEST_SHARD_INDEX=1 TEST_TOTAL_SHARDS=3 TEST_SHARD_STATUS_FILE=$WORK/status \
  expect 0 "shard from TEST_SHARD_INDEX/TEST_TOTAL_SHARDS" -- "${LOUD[@]}" --json "$WORK/bazel.json"
grep -q '^shard 1/3 from TEST_SHARD_INDEX/TEST_TOTAL_SHARDS' "$WORK/out" ||
  fail "the shard's source is not said: $(head -n 3 "$WORK/out")"
[[ -e $WORK/status ]] && ok "TEST_SHARD_STATUS_FILE touched" || fail "TEST_SHARD_STATUS_FILE not touched"
cmp -s <(ids "$WORK/bazel.json") <(ids "$WORK/s3-1.json") && ok "Bazel's shard 1/3 is --shard 1/3" ||
  fail "Bazel's shard 1/3 holds other cases than --shard 1/3"
BUILDKITE_PARALLEL_JOB=2 BUILDKITE_PARALLEL_JOB_COUNT=3 \
  expect 0 "shard from BUILDKITE_PARALLEL_JOB" -- "${LOUD[@]}" --json "$WORK/bk.json"
grep -q '^shard 2/3 from BUILDKITE_PARALLEL_JOB/BUILDKITE_PARALLEL_JOB_COUNT' "$WORK/out" ||
  fail "Buildkite's shard is not said"
TEST_SHARD_INDEX=1 expect 2 "a half-set pair of shard variables" -- "${RUN[@]}"
grep -q 'TEST_TOTAL_SHARDS' "$WORK/err" || fail "the missing variable is not named: $(cat "$WORK/err")"

# A failing kernel: the merged verdict and exit code are the unsharded run's.
BAD=(--backend host --world 2 --geometry tiny --mutant no-base-conversion -q)
expect 1 "the unsharded run of a broken kernel" -- "${BAD[@]}" --json "$WORK/bad.json"
for k in 0 1 2; do
  timeout 120 "$BIN" "${BAD[@]}" --shard "$k/3" --json "$WORK/bad-$k.json" >/dev/null 2>&1
done
expect 1 "merge of a broken kernel's shards" -- merge "$WORK"/bad-{0,1,2}.json --json "$WORK/badm.json"
cmp -s <(ids "$WORK/badm.json") <(ids "$WORK/bad.json") || fail "broken kernel: merged case list differs"
python3 - "$WORK/bad.json" "$WORK/badm.json" <<'PY' && ok "a broken kernel: merged statuses, verdict and counts are the unsharded run's" ||
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert [c["status"] for c in a["cases"]] == [c["status"] for c in b["cases"]]
assert a["counts"] == b["counts"] and a["verdict"] == b["verdict"] == "FAIL", (a["counts"], b["counts"])
PY
  fail "a broken kernel's merged report differs from the unsharded one"

# merge refuses what does not belong together: one line, exit 2.
refused() {  # refused WHAT PATTERN -- REPORTS...
  local what=$1 pattern=$2
  shift 3
  expect 2 "merge refuses $what" -- merge "$@"
  [[ $(wc -l <"$WORK/err") -eq 1 ]] && grep -q "$pattern" "$WORK/err" ||
    fail "merge ($what): not one line naming '$pattern': $(cat "$WORK/err")"
}
refused "a missing shard" "shard 2/3 is missing" -- "$WORK/s3-0.json" "$WORK/s3-1.json"
refused "a shard given twice" "both shard 1/3" -- "$WORK/s3-0.json" "$WORK/s3-1.json" "$WORK/s3-1.json"
refused "shards of different splits" "of 3 shards" -- "$WORK/s3-0.json" "$WORK/s7-1.json"
expect 0 "shard 0/2 at world 4" -- --backend host --world 4 --geometry tiny -q --shard 0/2 --json "$WORK/w4.json"
refused "another world" "world 2 vs 4" -- "$WORK/s7-0.json" "$WORK/w4.json"
expect 0 "shard 1/2 of another seed" -- "${RUN[@]}" --seed 5 --shard 1/2 --json "$WORK/seed5.json"
refused "another seed" "seed 0 vs 5" -- "$WORK/s7-0.json" "$WORK/seed5.json"
refused "a test-only broken variant" "mutant" -- "$WORK/s3-0.json" "$WORK/s3-1.json" "$WORK/bad-2.json"
expect 0 "shard 2/3 of a host plugin" -- "${RUN[@]}" --kernel "$PLUGIN" --shard 2/3 --json "$WORK/plugin.json"
refused "another kernel" "kernel direct vs dcp-host-plugin sha256 " -- "$WORK/s3-0.json" "$WORK/s3-1.json" "$WORK/plugin.json"
expect 0 "the smoke suite's shard 1/7" -- "${RUN[@]}" --suite smoke --shard 1/7 --json "$WORK/smoke.json"
refused "another suite" "suite default vs smoke" -- "$WORK/s7-0.json" "$WORK/smoke.json"
echo '{"not": "a report"}' >"$WORK/junk.json"
refused "a file that is no report" "not a dcp-check run" -- "$WORK/junk.json"
for bad in 3/3 -1/3 1/0 x 1/2/3; do
  expect 2 "--shard $bad" -- "${RUN[@]}" --shard "$bad"
done

# stress: each shard its own seed stream; the campaign merges.
ST=(stress --backend host --world 2 --geometry tiny --seed 7 --iterations 5 -q)
for k in 0 1; do
  expect 0 "stress shard $k/2" -- "${ST[@]}" --shard "$k/2" --json "$WORK/st-$k.json"
  grep -q "^shard $k/2: seed derived from base seed 0x0000000000000007" "$WORK/out" ||
    fail "stress shard $k/2 does not say its seed: $(head -n 3 "$WORK/out")"
done
seed0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stress"]["seed"])' "$WORK/st-0.json")
seed1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stress"]["seed"])' "$WORK/st-1.json")
[[ $seed0 != "$seed1" && $seed0 != 0x0000000000000007 ]] && ok "two shards, two seed streams ($seed0, $seed1)" ||
  fail "stress shards share a seed: $seed0 $seed1"
expect 2 "stress --shard without --seed" -- stress --backend host --world 2 --iterations 1 --shard 0/2
grep -q 'needs --seed' "$WORK/err" || fail "stress --shard without --seed: $(cat "$WORK/err")"
expect 0 "merge of the stress shards" -- merge "$WORK/st-0.json" "$WORK/st-1.json" --json "$WORK/st.json"
grep -q '^PASS: 10 scenarios' "$WORK/out" || fail "stress merge verdict: $(tail -n 1 "$WORK/out")"
# A broken kernel found by a shard: its replay line reproduces it alone.
timeout 120 "$BIN" stress --backend host --world 2 --geometry tiny --seed 7 --iterations 100 \
  --mutant no-base-conversion --no-shrink --shard 1/3 >"$WORK/stbad.out" 2>&1
rc=$?
replay=$(grep -m1 -E '^  dcp-check replay w2-' "$WORK/stbad.out" | sed 's/^ *//')
if [[ $rc -eq 1 && -n $replay ]]; then
  read -r -a words <<<"${replay#dcp-check }"
  expect 1 "the shard's failure replayed alone" -- "${words[@]}"
else
  fail "stress shard 1/3 of a broken kernel: exit $rc, replay '$replay'"
fi

# selftest: the mutants split across shards; merged, the unsharded table.
SELF=(selftest --backend host --world 2 --geometry tiny --fast --no-upstream -q
  --mutants single-parity,no-base-conversion,combined-lse-base-2,global-recv-buffers,signed-epoch-order,host-mapped-params)
expect 0 "selftest, unsharded" -- "${SELF[@]}" --json "$WORK/self.json"
for k in 0 1 2; do
  expect 0 "selftest shard $k/3" -- "${SELF[@]}" --shard "$k/3" --json "$WORK/self-$k.json"
done
expect 0 "merge of the selftest shards" -- merge "$WORK"/self-{0,1,2}.json --json "$WORK/selfm.json"
grep -q '^PASS: selftest: 6 of 6 mutants detected' "$WORK/out" || fail "selftest merge verdict: $(tail -n 1 "$WORK/out")"
python3 - "$WORK/self.json" "$WORK/selfm.json" <<'PY' && ok "the merged selftest holds the unsharded run's mutants and verdicts" ||
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
table = lambda r: sorted((m["id"], m["name"], m["verdict"]) for m in r["mutants"])
assert table(a) == table(b), (table(a), table(b))
assert a["exit_code"] == b["exit_code"] == 0 and b["merged"]["num_shards"] == 3
PY
  fail "the merged selftest differs from the unsharded one"
refused "a selftest report with a run's" "is a selftest report and" -- "$WORK/self-0.json" "$WORK/s3-1.json"
refused "a missing selftest shard" "shard 1/3 is missing" -- "$WORK/self-0.json" "$WORK/self-2.json"

[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; exit 1; }
echo "all shard/merge checks passed"
