#!/usr/bin/env bash
# For the GPU machine, with carried builds (ci/carry.sh, renamed; or
# ci/carry-refs.sh): an A/B of trees B, C, ... against tree A in one call, no
# build on the device. First each of B, C, ...'s GPU programs that hold it to
# the host (gpu_inputs: the preparation's bytes; gpu_check_agree: the device
# check's verdicts), then the check kernel alone for every tree on one rank's
# MPS share at world 8 (gpu_check_bench, 12.5%; bf16, then fp16 outputs: a
# tree older than the bench's --fp16 prints its usage there), then stress (kimi, MPS, seed
# 11, AB_DURATION each, default 8s) at the worlds in AB_WORLDS (default "8 4
# 2"; empty: none), the trees in order, AB_ROUNDS times (default 1), then B's
# check-twice and prep-twice at world 8 (their marginal costs: ci/perf.py
# --diag; AB_TWICE=0 skips them). Then, with AB_SUITES=1, `ci/gpu.sh check
# checkself` with each of B, C, ... (the suites and selftest with both
# checkers), and with AB_PERF=1 `ci/gpu.sh perf` (PERF_ROUNDS=2) with the one
# of B, C, ... that made the most calls/s at the first world of AB_WORLDS.
# Prints one line per run and a summary; the runs' logs land in $OUT/all.tgz
# (the device tool brings back a few files), the suites' and the perf table's
# as ci/gpu.sh leaves them (the last tree's).
#   carry ["build-carry-main", "build-carry-next"]; then
#   bash ci/carry-ab.sh build-carry-main build-carry-next [build-carry-other ...]
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=ci/mps.bash
source ci/mps.bash
[[ $# -ge 2 ]] || { echo "usage: ci/carry-ab.sh CARRY_A CARRY_B [CARRY_C ...]" >&2; exit 2; }
sides=(A B C D E F)
(($# <= ${#sides[@]})) || { echo "ci/carry-ab.sh: at most ${#sides[@]} trees" >&2; exit 2; }
declare -A build=()
i=0
for carry in "$@"; do
  [[ -x $carry/src/dcp-check ]] || { echo "ci/carry-ab.sh: $carry/src/dcp-check is missing" >&2; exit 2; }
  build[${sides[i]}]=$carry
  i=$((i + 1))
done
used=("${sides[@]:0:$#}")  # A B ...
others=("${used[@]:1}")    # B ...
OUT=${OUT:-/tmp/out}
work=$(mktemp -d)
status=0
run() {  # run CARRY NAME ARGS...: one program of a carried build, its log kept
  local carry=$1 name=$2
  shift 2
  LD_LIBRARY_PATH=$PWD/$carry/lib "$@" >"$work/$name.log" 2>&1
  local rc=$?
  echo "$name: rc $rc: $(grep -hE 'calls/s|PASS|FAIL|SKIPPED' "$work/$name.log" | tail -n 1)"
  return $rc
}
for side in "${others[@]}"; do
  b=${build[$side]}
  run "$b" "inputs-$side" "$b/tests/gpu_inputs" || status=1
  run "$b" "agree-$side" "$b/tests/gpu_check_agree" || status=1
done
if mps_start; then
  for format in bf16 fp16; do
    flags=(--reps 100)
    [[ $format == fp16 ]] && flags+=(--fp16)
    for side in "${used[@]}"; do
      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12.5 run "${build[$side]}" "bench12-$format-$side" \
        "${build[$side]}/tests/gpu_check_bench" "${flags[@]}"
      grep -E '^ +8 ' "$work/bench12-$format-$side.log"
    done
  done
  mps_stop
fi
read -r -a worlds <<<"${AB_WORLDS-8 4 2}"
for round in $(seq "${AB_ROUNDS:-1}"); do
  for w in "${worlds[@]}"; do
    for side in "${used[@]}"; do
      run "${build[$side]}" "stress-w$w-$side-$round" "${build[$side]}/src/dcp-check" stress --world "$w" --geometry kimi \
        --mps on --duration "${AB_DURATION:-8s}" --seed 11 --json "$work/stress-w$w-$side-$round.json" ||
        status=1
    done
  done
done
# B's marginal costs at world 8, in ci/perf.py --diag's file names (AB_TWICE=0: none).
B=${build[B]}
cp "$work/stress-w8-B-1.json" "$work/perf-stress-w8-gpu.json" 2>/dev/null
[[ ${AB_TWICE:-1} == 1 ]] && for step in check prep; do
  DCP_STEP_TWICE=$step run "$B" "twice-$step" "$B/src/dcp-check" stress --world 8 --geometry kimi \
    --mps on --duration "${AB_DURATION:-8s}" --seed 11 --json "$work/perfdiag-w8-$step-twice.json" || status=1
done
[[ ${AB_TWICE:-1} == 1 ]] && python3 ci/perf.py --diag "$work" 2>/dev/null | sed -n '/what a step costs/,/^$/p'
mkdir -p "$OUT"
tar czf "$OUT/all.tgz" -C "$work" . || status=1
# One tree's suites and selftest with both checkers (ci/gpu.sh check checkself).
gpu_steps() {  # gpu_steps SIDE STEP...: ci/gpu.sh with that tree's binaries
  local carry=${build[$1]}
  shift
  BUILD_DIR=$carry LD_LIBRARY_PATH=$PWD/$carry/lib bash ci/gpu.sh "$@" | tail -n 14
  return "${PIPESTATUS[0]}"
}
if [[ ${AB_SUITES:-0} == 1 ]]; then
  for side in "${others[@]}"; do
    echo "== $side (${build[$side]}): ci/gpu.sh check checkself"
    gpu_steps "$side" check checkself || status=1
  done
fi
# The calls/s of tree SIDE's first-round stress run at world W (0 when none).
rate_of() {  # rate_of W SIDE
  local r
  r=$(grep -hoE '[0-9]+ calls/s' "$work/stress-w$1-$2-1.log" 2>/dev/null | grep -oE '^[0-9]+' | head -n 1)
  echo "${r:-0}"
}
if [[ ${AB_PERF:-0} == 1 ]]; then
  best=B
  if ((${#worlds[@]} > 0)); then
    for side in "${others[@]}"; do
      (($(rate_of "${worlds[0]}" "$side") > $(rate_of "${worlds[0]}" "$best"))) && best=$side
    done
  fi
  echo "== perf with $best (${build[$best]}): the most calls/s at world ${worlds[0]:-none} of ${others[*]}"
  PERF_DURATION=${PERF_DURATION:-8s} PERF_ROUNDS=${PERF_ROUNDS:-2} gpu_steps "$best" perf || status=1
fi
exit $status
