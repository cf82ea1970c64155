#!/usr/bin/env bash
# For the GPU machine: an A/B of stress throughput on one machine, this tree
# against an older one. Hosts differ from call to call far more than most
# changes move a run, so a change is judged only against a baseline built and
# run in the same call. Before the call, export the baseline into the working
# tree (untracked, not ignored, so it travels with it; delete it afterwards):
#   rm -rf perf-base && mkdir perf-base && git archive <rev> | tar -x -C perf-base
# Then: bash ci/perf-ab.sh [ROUNDS]   (10 s runs of seed 11 under MPS; both
# trees in turn at world 4, ROUNDS times, then once at world 2; DCP_CHECK_THREADS
# is passed through). AB_VARIANTS="K=V ..." adds, for each word, a run of
# this tree with that variable set, beside each pair (diagnosis knobs such as
# DCP_SYNC=yield). Then `ctest -L gpu` of this tree with the time left of
# a 570 s budget. Each run's verdict and phases line, logs and JSON under $OUT.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
OUT=${OUT:-/tmp/out}
BASE=${BASE:-perf-base}
ROUNDS=${1:-2}
mkdir -p "$OUT"
[[ -f $BASE/CMakeLists.txt ]] || { echo "ci/perf-ab.sh: no baseline tree at $BASE (see the header)" >&2; exit 2; }
command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH
NCCL_ROOT=${NCCL_ROOT:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}
start=$SECONDS
build() {  # build DIR TAG TARGETS
  { cmake -S "$1" -B "$1/build-gpu" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DNCCL_ROOT="$NCCL_ROOT" &&
      cmake --build "$1/build-gpu" -j8 --target $3; } >"$OUT/build-$2.log" 2>&1
  echo "build $2 rc $? at $((SECONDS - start)) s"
}
build . new all & build "$BASE" base dcp-check & wait
NEW=build-gpu/src/dcp-check OLD=$BASE/build-gpu/src/dcp-check
[[ -x $NEW && -x $OLD ]] || { tail -n 30 "$OUT"/build-*.log; exit 1; }
run() {  # run TAG BIN WORLD ROUND
  local log="$OUT/$1-w$3-$4.log"
  "$2" stress --world "$3" --geometry kimi --mps on --duration "${PERF_DURATION:-10s}" --seed 11 -v \
    --json "${log%.log}.json" >"$log" 2>&1
  echo "$1 w$3 (round $4): $(grep -E '^(PASS|FAIL)' "$log" | cut -c1-110)"
  grep -E 'phases \(' "$log" | sed 's/.*ranks)://' | cut -c1-260
}
variants() {  # variants WORLD ROUND
  local v
  for v in ${AB_VARIANTS:-}; do (export "${v?}" && run "new-${v//[^A-Za-z0-9]/_}" "$NEW" "$1" "$2"); done
}
for ((r = 1; r <= ROUNDS; r++)); do run new "$NEW" 4 "$r"; run base "$OLD" 4 "$r"; variants 4 "$r"; done
run new "$NEW" 2 1
run base "$OLD" 2 1
variants 2 1
left=$((570 - SECONDS + start))
timeout "$left" ctest --test-dir build-gpu -L gpu --output-on-failure >"$OUT/test-gpu.log" 2>&1
echo "ctest -L gpu rc $? (limit $left s): $(grep -E 'tests passed' "$OUT/test-gpu.log")"
echo "total $((SECONDS - start)) s"
