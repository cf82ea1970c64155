#!/usr/bin/env bash
# Deliberately broken GPU kernels (the hidden test-only `run --mutant NAME`,
# names from kernels/mutants.h) must be caught and reported usefully. For each
# mutant, the world 2 default suite must:
# - exit 1 with a FAIL verdict, at least two failed cases and no errors;
# - print mismatch lines naming rank, op, token, head, dim, got, want, ulps;
# - print replay lines that carry `--mutant NAME`; the first one, rerun,
#   fails again (exit 1), and passes without the mutant (the failure is the
#   mutant's, not the case's);
# - print "failures by axis value": the rows the mutant cannot fail (e.g.
#   base=2 for no-base-conversion) are absent, and a row of the axis value it
#   breaks is present; in the JSON report every failed case has that value.
# Usage: gpu_broken_kernel.sh path/to/dcp-check
# shellcheck source=tests/gpu_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/gpu_lib.bash"
gpu_init gpu_broken_kernel "$@"

# name ; ERE on case ids the mutant can break ; ERE of its axis rows ;
# ERE of axis rows it cannot fail (axis values: src/report/report_terminal.cpp).
# Fields are separated by ';' because the EREs themselves contain '|'.
MUTANTS=(
  "no-base-conversion;-basee-;base=e;base=2"
  "ignore-lse-stride;-pad[0-9]+x[1-9][0-9]*-;stride=padded-(lse|both);stride=(contig|padded-out)"
  "empty-not-masked;-empty(one|all|random|spec)-;empty=(one|all|random|spec);empty=none"
  "host-mapped-params;-graphs[0-9]+-;mode=graphs:;mode=(eager|graph|pipe|mix):"
)
MISMATCH='rank [0-9]+ op [0-9]+ token [0-9]+ head [0-9]+ dim [0-9]+: got [^ ]+ want [^ ]+ \([^ ]+ ulps'
NUM_AXIS_ROWS_MAX=12 # failures_by_axis() prints at most this many rows

check_axis_table() {  # check_axis_table NAME MUTANT TRIGGER_ROWS FORBIDDEN_ROWS
  local name=$1 mutant=$2 trigger=$3 forbidden=$4 rows
  rows=$(sed -n '/^failures by axis value:/,/^[^ ]/p' "$WORK/$name.out" | grep -E '^  [a-z]+=')
  if [[ -z $rows ]]; then
    fail "$mutant: no 'failures by axis value:' table with 'axis=value: N failed / M' rows"
    show_tail "$name" 40
    return
  fi
  awk '{ print "  " $0 }' <<<"$rows"
  if echo "$rows" | grep -Evq '^  [a-z]+=[^ ]+: [0-9]+ failed / [0-9]+( \(all\))?$'; then
    fail "$mutant: malformed axis rows"
  else
    pass "$mutant: failures grouped by axis value ($(echo "$rows" | wc -l) rows)"
  fi
  if echo "$rows" | grep -Eq "^  ($forbidden):"; then
    fail "$mutant: the axis table has rows the mutant cannot fail (/$forbidden/)"
  else
    pass "$mutant: no axis row the mutant cannot fail (/$forbidden/)"
  fi
  if echo "$rows" | grep -Eq "^  ($trigger):"; then
    pass "$mutant: the axis table names the value it breaks (/$trigger/)"
  elif (($(echo "$rows" | wc -l) >= NUM_AXIS_ROWS_MAX)); then
    echo "note: $mutant: /$trigger/ not among the $NUM_AXIS_ROWS_MAX rows shown (the table is full)"
  else
    fail "$mutant: the axis table lacks a row /$trigger/"
  fi
}

# replay_checks NAME MUTANT: reruns the first replay line with and without the mutant.
replay_checks() {
  local name=$1 mutant=$2 line stripped i
  local -a argv clean
  line=$(grep -m1 -E '^  dcp-check replay w2-' "$WORK/$name.out" | sed 's/^ *//')
  if [[ -z $line ]]; then
    fail "$mutant: no replay line"
    return
  fi
  if [[ $line == *" --mutant $mutant"* ]]; then
    pass "$mutant: replay line carries the mutant: $line"
  else
    fail "$mutant: replay line lacks --mutant $mutant: $line"
  fi
  read -r -a argv <<<"${line#dcp-check }"
  run_dcp "$name-replay" 120 "${argv[@]}"
  expect_rc "$name-replay" 1 "$mutant: the replay line fails again" &&
    expect_output "$name-replay" "$mutant: the replay prints a mismatch line" "$MISMATCH"
  clean=()
  for ((i = 0; i < ${#argv[@]}; i++)); do
    if [[ ${argv[i]} == --mutant ]]; then i=$((i + 1)); continue; fi
    clean+=("${argv[i]}")
  done
  stripped="${clean[*]}"
  run_dcp "$name-clean" 120 "${clean[@]}"
  expect_rc "$name-clean" 0 "$mutant: the same case passes without the mutant ($stripped)"
}

for spec in "${MUTANTS[@]}"; do
  IFS=';' read -r mutant ids trigger forbidden <<<"$spec"
  name=${mutant//-/_}
  run_dcp "$name" 240 --world 2 --mutant "$mutant" --json "$WORK/$name.json"
  expect_rc "$name" 1 "$mutant: the world 2 default suite fails"
  expect_output "$name" "$mutant: FAIL verdict and mismatch lines with rank/op/token/head/dim/got/want/ulps" \
    '^FAIL: [0-9]+ cases: [0-9]+ passed, [0-9]+ failed, [0-9]+ errors' "$MISMATCH"
  echo "    first mismatch: $(grep -m1 -E "$MISMATCH" "$WORK/$name.out" | sed 's/^ *//')"
  check_axis_table "$name" "$mutant" "$trigger" "$forbidden"
  if [[ -s $WORK/$name.json ]]; then
    py_checks "$name" "$WORK/$name.json" "$mutant" "$ids" <<'PY'
import re
report, mutant, ids = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
counts = report["counts"]
check(report["environment"]["backend"] == "gpu", f"{mutant}: ran on backend {report['environment']['backend']!r}")
check(counts["failed"] >= 2 and counts["errors"] == 0,
      f"{mutant}: {counts['failed']} cases failed, {counts['errors']} errors (want >= 2 failed, no errors)")
failed = [c for c in report["cases"] if c["status"] == "fail"]
stray = [c["id"] for c in failed if not re.search(ids, c["id"])]
check(not stray, f"{mutant}: every failed case matches /{ids}/ (not: {stray[:3]})")
no_replay = [c["id"] for c in failed if not c["replay"].endswith("--mutant " + mutant)]
check(not no_replay, f"{mutant}: every failed case's replay ends with --mutant {mutant} (not: {no_replay[:3]})")
PY
  else
    fail "$mutant: no JSON report"
  fi
  replay_checks "$name" "$mutant"
done

gpu_finish
