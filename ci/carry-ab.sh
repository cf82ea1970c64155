#!/usr/bin/env bash
# For the GPU machine, with two carried builds (ci/carry.sh, renamed): an A/B
# of tree B against tree A in one call, no build on the device. First B's GPU
# programs that hold it to the host (gpu_inputs: the preparation's bytes;
# gpu_check_agree: the device check's verdicts), then the check kernel alone
# for both on one rank's MPS share at world 8 (gpu_check_bench, 12.5%), then
# stress (kimi, MPS, seed 11, AB_DURATION each, default 8s) at the worlds in
# AB_WORLDS (default "8 4 2"; empty: none), A then B, AB_ROUNDS times (default 1), then B's
# check-twice and prep-twice at world 8 (their marginal costs: ci/perf.py
# --diag; AB_TWICE=0 skips them). Prints one line per run and a summary; everything lands in
# $OUT/all.tgz only (the device tool brings back a few files).
#   carry ["build-carry-main", "build-carry-next"]; then
#   bash ci/carry-ab.sh build-carry-main build-carry-next
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=ci/mps.bash
source ci/mps.bash
A=${1:?usage: ci/carry-ab.sh CARRY_A CARRY_B} B=${2:?usage: ci/carry-ab.sh CARRY_A CARRY_B}
declare -A build=([A]=$A [B]=$B)
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
run "$B" inputs-b "$B/tests/gpu_inputs" || status=1
run "$B" agree-b "$B/tests/gpu_check_agree" || status=1
if mps_start; then
  for side in A B; do
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12.5 run "${build[$side]}" "bench12-$side" \
      "${build[$side]}/tests/gpu_check_bench" --reps 100
    grep -E '^ +8 ' "$work/bench12-$side.log"
  done
  mps_stop
fi
for round in $(seq "${AB_ROUNDS:-1}"); do
  for w in ${AB_WORLDS-8 4 2}; do
    for side in A B; do
      run "${build[$side]}" "stress-w$w-$side-$round" "${build[$side]}/src/dcp-check" stress --world "$w" --geometry kimi \
        --mps on --duration "${AB_DURATION:-8s}" --seed 11 --json "$work/stress-w$w-$side-$round.json" ||
        status=1
    done
  done
done
# B's marginal costs at world 8, in ci/perf.py --diag's file names (AB_TWICE=0: none).
cp "$work/stress-w8-B-1.json" "$work/perf-stress-w8-gpu.json" 2>/dev/null
[[ ${AB_TWICE:-1} == 1 ]] && for step in check prep; do
  DCP_STEP_TWICE=$step run "$B" "twice-$step" "$B/src/dcp-check" stress --world 8 --geometry kimi \
    --mps on --duration "${AB_DURATION:-8s}" --seed 11 --json "$work/perfdiag-w8-$step-twice.json" || status=1
done
[[ ${AB_TWICE:-1} == 1 ]] && python3 ci/perf.py --diag "$work" 2>/dev/null | sed -n '/what a step costs/,/^$/p'
mkdir -p "$OUT"
tar czf "$OUT/all.tgz" -C "$work" . || status=1
exit $status
