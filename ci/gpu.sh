#!/usr/bin/env bash
# For the GPU machine: build against the PyTorch wheel's NCCL for sm_90, run the
# GPU-labelled tests and the README demo, keep every log under $OUT, and print
# a short summary last. Steps are arguments, in any order (default: all):
#   ci/gpu.sh build test demo      build | unit | test | demo | plugin | families | pressure | perf
#   unit = every non-GPU CTest test, test = `ctest -L gpu`, plugin = the
#   example plugin (kernels/example_plugin, its own CMake project) through
#   the default suites, its broken copy, and the built-in mutants via the seam;
#   families = each field-failure mutant caught by its case family only;
#   pressure = SM pressure: the pressure kernel and the pressure suite;
#   observe = kernels observed from outside (CUPTI): the foreign-shaped example
#   plugin's hangs diagnosed, residency warnings, --against, the tracing cost;
#   install = cmake --install to a scratch prefix: the installed binary runs
#   the main job under MPS and the example plugin built with find_package;
#   litmus = weak-memory litmus tests with and without memory stress (--mps off, on);
#   memstress = the memory-stress family, its mutants in selftest, its cost in stress;
#   perf = the throughput benchmark (ci/perf.py prints its table, $OUT/perf.md;
#          PERF_ROUNDS=N interleaves N rounds and takes each checker's median run);
#   perfdiag = what bounds the device-checked stress run: CUPTI observation and
#   the memory stress off one at a time, the host spinning on the device
#   instead of sleeping (DCP_SYNC=spin), every call step timed alone
#   (DCP_TRACE_STEPS=0), nsys's kernel summary where nsys is installed (not
#   with DIAG_NSYS=0); DIAG_WORLDS (default "8 4"), DIAG_ONLY="NAME ..." pick runs;
#   sanitize = every worker under compute-sanitizer: the built-in kernel and the
#   example plugin pass memcheck at --world 2, the read-far-past-input mutant
#   is reported by memcheck (kernel, access), the other tools on the smoke
#   suite, what is refused, and the overhead (wall time with and without);
#   dump = replay --dump of a GPU case, reloaded by docs/dump_check.py (NumPy);
#   check = the device checker against the CPU checker: the default suites
#   pass with --check gpu and --check cpu, selftest detects the same mutants
#   with either, a skewed device verdict is a disagreement (exit 3), a
#   broken kernel's mismatches are found on the device and explained on the
#   CPU, and the kernel agrees with the CPU on badly broken outputs
#   (tests/gpu_check_agree);
#   checkprofile = Nsight Compute source counters of the check kernel per SASS line;
#   checkself = selftest at --world 2 with each checker (the same verdicts);
#   smreach = tests/gpu_sm_reach alone and on a 12.5% MPS share: whether a context
#   with an execution-affinity SM count reaches more SMs than the share;
#   checkbench = the device check and the call preparation alone in one process
#   (tests/gpu_check_bench: W 2/4/8 x T 1..128, verdicts held), alone and on
#   an MPS share of 50/25/12.5% of the SMs, then Nsight Compute on both at W=4, T=128.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=ci/mps.bash
source ci/mps.bash

OUT=${OUT:-/tmp/out}
BUILD_DIR=${BUILD_DIR:-build-gpu}
NCCL_ROOT=${NCCL_ROOT:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}
BIN=$BUILD_DIR/src/dcp-check
mkdir -p "$OUT"
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

steps=("$@")
[[ ${#steps[@]} -gt 0 ]] || steps=(build test demo)
summary=()
status=0

record() {  # record NAME RC SECONDS [DETAIL]
  local word="ok"
  [[ $2 -eq 0 ]] || { word="FAILED (exit $2)"; status=1; }
  summary+=("$(printf '%-36s %-16s %4d s  %s' "$1" "$word" "$3" "${4:-}")")
  echo "${summary[-1]}" >>"$OUT/summary-so-far.txt"  # survives a killed run
}

step_build() {
  local start=$SECONDS rc
  { cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DNCCL_ROOT="$NCCL_ROOT" &&
      cmake --build "$BUILD_DIR" -j"$(nproc)"; } >"$OUT/build.log" 2>&1
  rc=$?
  [[ $rc -eq 0 ]] || tail -n 30 "$OUT/build.log"
  record build "$rc" $((SECONDS - start)) "$OUT/build.log"
}

step_ctest() {  # step_ctest NAME LABEL-ARGS...
  local name=$1 start=$SECONDS rc
  shift
  ctest --test-dir "$BUILD_DIR" "$@" --output-on-failure >"$OUT/$name.log" 2>&1
  rc=$?
  local line
  line=$(grep -E 'tests passed|No tests were found' "$OUT/$name.log" | tail -n 1)
  [[ $rc -eq 0 ]] || grep -E '\*\*\*|Failed|Not Run' "$OUT/$name.log" | tail -n 20
  record "$name" "$rc" $((SECONDS - start)) "$line"
}

step_demo() {  # the README's main job on one machine: world 2, then world 4 kimi
  local args name start rc verdict
  for args in "--world 2" "--world 4 --geometry kimi"; do
    name="demo ${args//--/}"
    name=${name// /_}
    start=$SECONDS
    # shellcheck disable=SC2086
    "$BIN" $args --json "$OUT/$name.json" --junit "$OUT/$name.xml" >"$OUT/$name.log" 2>&1
    rc=$?
    verdict=$(grep -E '^(PASS|FAIL|HARNESS ERROR|INTERRUPTED)|^dcp-check: ' "$OUT/$name.log" | tail -n 1)
    tail -n 25 "$OUT/$name.log"
    record "dcp-check $args" "$rc" $((SECONDS - start)) "$verdict"
  done
}

run_expect() {  # run_expect NAME WANT_RC ARGS...: one dcp-check run, its verdict in the summary
  local name=$1 want=$2 start=$SECONDS rc verdict log
  shift 2
  log="$OUT/${name// /_}.log"
  "$BIN" "$@" >"$log" 2>&1
  rc=$?
  verdict=$(grep -E '^(PASS|FAIL|USAGE ERROR|HARNESS ERROR|INTERRUPTED)|^dcp-check: |^selftest' "$log" | tail -n 1)
  if [[ $1 == selftest ]]; then tail -n 30 "$log"; else tail -n 6 "$log"; fi
  if [[ $rc -eq $want ]]; then rc=0; elif [[ $rc -eq 0 ]]; then rc=98; fi  # 98: passed, should not
  record "$name (want $want)" "$rc" $((SECONDS - start)) "$verdict"
}

# The example plugin as a kernel team builds it: `cmake --install` this build
# to PREFIX, then the installed example folder with find_package(dcp_check)
# against PREFIX only. build_example PREFIX DIR LOG
build_example() {
  local prefix dir log=$3
  prefix=$(realpath -m "$1")  # CMAKE_PREFIX_PATH must not be relative
  dir=$(realpath -m "$2")
  rm -rf "$prefix" "$dir"  # a cache from another source folder would be refused
  { cmake --install "$BUILD_DIR" --prefix "$prefix" &&
      cmake -S "$prefix/share/dcp_check/example_plugin" -B "$dir" -G Ninja \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$prefix" &&
      cmake --build "$dir" -j"$(nproc)"; } >"$log" 2>&1
}

step_plugin() {
  local start=$SECONDS rc dir=$BUILD_DIR/example-plugin
  build_example "$BUILD_DIR/prefix" "$dir" "$OUT/plugin-build.log"
  rc=$?
  [[ $rc -eq 0 ]] || tail -n 30 "$OUT/plugin-build.log"
  record "example plugin build" "$rc" $((SECONDS - start)) "$OUT/plugin-build.log"
  [[ $rc -eq 0 ]] || return
  local ex=$dir/libdcp_example_plugin.so broken=$dir/libdcp_example_plugin_broken.so
  run_expect "plugin w2" 0 --world 2 --kernel "$ex" --json "$OUT/plugin-w2.json"
  run_expect "plugin w2 check cpu" 0 --world 2 --kernel "$ex" --check cpu \
    --json "$OUT/plugin-w2-cpu.json"
  [[ ${PLUGIN_QUICK:-0} == 1 ]] && return  # the above only
  run_expect "plugin w4 kimi mps" 0 --world 4 --geometry kimi --mps on --kernel "$ex" \
    --json "$OUT/plugin-w4.json" --junit "$OUT/plugin-w4.xml"
  run_expect "broken plugin w2" 1 --world 2 --kernel "$broken"
  run_expect "direct w4 kimi mps" 0 --world 4 --geometry kimi --mps on
  run_expect "selftest via seam" 0 selftest --world 2 --fast --json "$OUT/selftest.json"
  run_expect "plugin vs direct bits" 0 --world 2 --suite smoke --kernel "$ex" --against direct
}

# Issue 15's field-failure families: each mutant is caught by its family's
# cases and survives every other case (w2 time-sliced, w4 kimi under MPS),
# then the whole self-test at w4 kimi under MPS.
step_families() {
  local w args pair mutant token
  for w in 2 4; do
    args=(--world "$w" --fast --no-upstream)
    [[ $w -eq 4 ]] && args+=(--geometry kimi --mps on)
    # MUTANT:TOKEN, where TOKEN is in the ids of the cases of its family.
    for pair in no-grid-dependency-wait:prodpdl host-mapped-params:graphs \
      unjoined-side-stream:reuse global-recv-buffers:ctx2 unbounded-init-handshake:initfail \
      resized-staging:churn; do
      mutant=${pair%%:*} token=${pair#*:}
      run_expect "w$w $mutant by $token" 0 selftest "${args[@]}" \
        --mutants "$mutant" --filter "$token"
      run_expect "w$w $mutant without" 1 selftest "${args[@]}" \
        --mutants "$mutant" --filter "^((?!$token).)*\$"
    done
  done
  # Forward progress needs ranks that run at once: MPS on a shared GPU, where
  # pressure cases run with at most 2 ranks per GPU (src/wire/pressure_rule.h).
  run_expect "w2 mps spinning-combine-blocks by press" 0 selftest --world 2 --mps on \
    --fast --no-upstream --mutants spinning-combine-blocks --filter press
  run_expect "w2 mps spinning-combine-blocks without" 1 selftest --world 2 --mps on \
    --fast --no-upstream --mutants spinning-combine-blocks --filter '^((?!press).)*$'
  run_expect "selftest w4 kimi mps" 0 selftest --world 4 --geometry kimi --mps on --fast \
    --json "$OUT/selftest-w4.json"
}

# Issue 15 item 10, SM pressure: the pressure kernel holds the SMs it claims
# and no more (gpu_pressure), the built-in kernel passes the pressure suite
# (time-sliced and under MPS) and its upstream-shaped mutant hangs there.
step_pressure() {
  step_ctest gpu_pressure -R '^gpu_pressure$'
  # Printed, not only logged: $OUT returns only a few files.
  grep -E "^(ok|FAIL|     )" "$OUT/gpu_pressure.log" | head -n 30
  # Steps of a call that wait (DCP_TRACE_STEPS: each synchronised, those
  # over 50 ms printed): none, once the pressure leaves its free SMs free.
  DCP_TRACE_STEPS=50 run_expect "pressure w2 traced" 0 --world 2 --suite pressure --timeout 3
  grep -E '^trace' "$OUT/pressure_w2_traced.log" | head -n 8
  run_expect "pressure w2 mps" 0 --world 2 --mps on --suite pressure --timeout 3 -v
  run_expect "pressure w4 kimi" 0 --world 4 --geometry kimi --suite pressure --timeout 3 -v
  # Four ranks on one GPU under MPS: skipped by name (src/wire/pressure_rule.h);
  # with two GPUs or more they run.
  local gpus want=0
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  [[ $gpus -le 1 ]] && want=2
  run_expect "pressure w4 kimi mps" "$want" --world 4 --geometry kimi --mps on --suite pressure \
    --timeout 3
  # (The upstream-shaped mutant's rows are in the families step.)
}

# Issue 31: a kernel that publishes nothing, diagnosed from outside. The
# foreign-shaped example plugin (every combine block spins, no wait status)
# must hang under SM pressure (w2 MPS) and with two slots pipelined at
# T = max_tokens on a shared GPU, and the message must name the stuck kernels
# and give the forward-progress verdict; with --observe off, today's message.
step_observe() {
  local dir=$BUILD_DIR/example-plugin log
  build_example "$BUILD_DIR/prefix" "$dir" "$OUT/plugin-build.log"
  local ex=$dir/libdcp_example_plugin.so foreign=$dir/libdcp_example_plugin_foreign.so
  run_expect "foreign pressure w2 mps" 1 --world 2 --mps on --suite pressure --timeout 3 \
    --kernel "$foreign" --json "$OUT/foreign-pressure.json"
  # Every two-slot pipelined case at T = max_tokens of the full suite (241 at
  # w2), no SM pressure: whether the foreign shape deadlocks on its own.
  run_expect "foreign ub2 pipe tmax w2" 1 --world 2 --geometry kimi --timeout 3 --suite full \
    --kernel "$foreign" --filter '^(?!.*press).*t128-.*ub2-pipe'
  run_expect "foreign ub2 pipe tmax w2 mps" 1 --world 2 --geometry kimi --timeout 3 --mps on \
    --suite full --kernel "$foreign" --filter '^(?!.*press).*t128-.*ub2-pipe'
  run_expect "foreign pressure observe off" 1 --world 2 --mps on --suite pressure --timeout 3 \
    --kernel "$foreign" --observe off
  for log in foreign_pressure_w2_mps foreign_ub2_pipe_tmax_w2 foreign_ub2_pipe_tmax_w2_mps \
    foreign_pressure_observe_off; do
    echo "--- $log"
    grep -E '^  ERROR|^      ' "$OUT/$log.log" | cut -c1-1200 | head -n 24
  done
  grep -q 'forward-progress: ' "$OUT/foreign_pressure_w2_mps.log"
  record "foreign pressure: verdict given" $? 0
  grep -q 'forward-progress: ' "$OUT/foreign_ub2_pipe_tmax_w2.log"
  record "foreign ub2 pipe: verdict given" $? 0
  grep -q 'forward-progress: ' "$OUT/foreign_ub2_pipe_tmax_w2_mps.log"
  record "foreign ub2 pipe mps: verdict given" $? 0
  run_expect "example plugin smoke w2" 0 --world 2 --suite smoke --kernel "$ex"
  run_expect "direct smoke w2" 0 --world 2 --suite smoke
  grep -h '^warning:' "$OUT/example_plugin_smoke_w2.log" \
    "$OUT/direct_smoke_w2.log" | cut -c1-300
  run_expect "plugin against direct w2" 0 --world 2 --kernel "$ex" --against direct
  grep -h '^agreement' "$OUT/plugin_against_direct_w2.log" | cut -c1-400
  local mode
  for mode in on off on off; do
    run_expect "stress w4 observe $mode" 0 stress --world 4 --geometry kimi --mps on \
      --duration 8s --seed 11 --observe "$mode"
    grep -hE 'calls/s' "$OUT/stress_w4_observe_$mode.log" | tail -n 1
  done
}

# Weak memory on this GPU (issue 34, "measure first"): the litmus table time-
# sliced (--mps off) and under MPS, each with its JSON; the table itself is
# the log's tail.
step_litmus() {
  local mode
  for mode in off on; do
    run_expect "litmus mps $mode" 0 litmus --mps "$mode" --iterations "${LITMUS_ITERATIONS:-10000000}" \
      --json "$OUT/litmus-mps-$mode.json"
    sed -n '/^stress calibration/,$p' "$OUT/litmus_mps_$mode.log"
  done
}

# The memory-stress family (issue 34): the correct kernel passes it at w2 and
# w4 kimi under MPS; selftest runs the memory-ordering mutants against it
# (caught or not: the summary says); stress calls/s with the axis on every
# scenario against none.
step_memstress() {
  run_expect "memstress w2 mps" 0 --world 2 --suite memstress --mps on
  run_expect "memstress w4 kimi mps" 0 --world 4 --geometry kimi --suite memstress --mps on
  run_expect "memstress w2 timesliced" 0 --world 2 --suite memstress --mps off
  local ordering=relaxed-ordering,no-arrival-fence,relaxed-spinning-combine mode
  run_expect "selftest memstress w2 mps" 0 selftest --world 2 --suite memstress --mps on \
    --mutants "$ordering"
  run_expect "selftest memstress w4 kimi mps" 0 selftest --world 4 --geometry kimi \
    --suite memstress --mps on --mutants "$ordering"
  # Without the stress axis: the same cases with -mstress removed.
  run_expect "selftest no-mstress w2 mps" 1 selftest --world 2 --suite memstress --mps on \
    --mutants "$ordering" --no-memory-stress
  [[ ${MEMSTRESS_COST:-1} == 1 ]] || return 0
  for mode in off all off all; do
    run_expect "stress w4 mstress $mode" 0 stress --world 4 --geometry kimi --mps on \
      --duration 8s --seed 11 --mstress "$mode"
    grep -hE 'calls/s' "$OUT/stress_w4_mstress_$mode.log" | tail -n 1
  done
}

# Issue 33: compute-sanitizer on every worker. Wall times with and without
# the sanitizer are in the summary (docs/results: the overhead).
step_sanitize() {
  local dir=$BUILD_DIR/example-plugin token tool
  build_example "$BUILD_DIR/prefix" "$dir" "$OUT/plugin-build.log"
  local ex=$dir/libdcp_example_plugin.so
  # SANITIZE_SUITE=default for the whole default suite (minutes under memcheck).
  local suite=${SANITIZE_SUITE:-smoke}
  run_expect "$suite w2 bare" 0 --world 2 --suite "$suite"
  run_expect "$suite w2 memcheck" 0 --world 2 --suite "$suite" --sanitize memcheck \
    --json "$OUT/sanitize-$suite.json"
  run_expect "plugin $suite w2 bare" 0 --world 2 --suite "$suite" --kernel "$ex"
  run_expect "plugin $suite w2 memcheck" 0 --world 2 --suite "$suite" --kernel "$ex" \
    --sanitize memcheck
  for tool in racecheck synccheck initcheck; do
    run_expect "smoke w2 $tool" 0 --world 2 --suite smoke --sanitize "$tool"
    grep -E '^      compute-sanitizer' "$OUT/smoke_w2_$tool.log" | cut -c1-300 | head -n 4
  done
  token=w2-$("$BIN" list --world 2 --suite smoke | head -n 1)
  run_expect "read-far-past-input memcheck" 1 replay "$token" --sanitize memcheck \
    --mutant read-far-past-input --json "$OUT/sanitize-mutant.json"
  grep -E "compute-sanitizer|memcheck: " "$OUT/read-far-past-input_memcheck.log" | cut -c1-400 | head -n 6
  grep -q "memcheck: Invalid __global__ read of size 4 bytes in kernel '[^']*direct_dispatch_kernel" \
    "$OUT/read-far-past-input_memcheck.log"
  record "mutant: memcheck names kernel and access" $? 0
  run_expect "read-far-past-input bare" 1 replay "$token" --mutant read-far-past-input
  run_expect "sanitize with mps on refused" 2 --world 2 --suite smoke --sanitize memcheck --mps on
  # The overhead, for docs/results: the wall times in the summary above
  # ("smoke w2 bare" against "smoke w2 memcheck", the plugin's likewise).
}

# Issue 33: a GPU case's tensors as .npy, recomputed by NumPy (docs/dump_check.py).
step_dump() {
  local token dir=$OUT/dump rc py=python3 start=$SECONDS
  [[ -x /opt/torch/.venv/bin/python ]] && py=/opt/torch/.venv/bin/python
  rm -rf "$dir"
  token=w2-$("$BIN" list --world 2 --geometry kimi | grep -E -- '-empty(one|random)-' | head -n 1)
  run_expect "replay --dump kimi" 0 replay "$token" --dump "$dir"
  "$py" docs/dump_check.py "$dir" >"$OUT/dump_check.log" 2>&1
  rc=$?
  tail -n 4 "$OUT/dump_check.log"
  record "dump_check.py on a GPU dump" "$rc" $((SECONDS - start)) "$(tail -n 1 "$OUT/dump_check.log" | cut -c1-120)"
  "$py" -c "import torch, numpy, json, sys; d='$dir'; m=json.load(open(d+'/manifest.json')); t=m['ranks'][0]['tensors'][0]; print('torch.from_numpy:', t['file'], tuple(torch.from_numpy(numpy.load(d+'/'+t['file'])).shape))" \
    >>"$OUT/dump_check.log" 2>&1 && tail -n 1 "$OUT/dump_check.log"
  rm -rf "$dir"  # large: kept out of what $OUT brings back
}

# The benchmark of docs/results (throughput): each run's JSON, then the table.
# Issue 32: the installed binary (cmake --install to a scratch prefix, not
# under $OUT) passes the main job, and runs the example plugin built from the
# installed package with find_package(dcp_check); a sharded run merges.
step_install() {
  local start=$SECONDS rc prefix dir
  prefix=$(mktemp -d /tmp/dcp-check-prefix.XXXXXX)
  dir=$prefix/example-build
  build_example "$prefix/p" "$dir" "$OUT/install-build.log"
  rc=$?
  [[ $rc -eq 0 ]] || tail -n 30 "$OUT/install-build.log"
  record "install + example via find_package" "$rc" $((SECONDS - start)) "$OUT/install-build.log"
  if [[ $rc -eq 0 ]]; then
    local saved=$BIN
    BIN=$prefix/p/bin/dcp-check
    "$BIN" --version | tee "$OUT/install-version.txt"
    run_expect "installed w4 kimi mps" 0 --world 4 --geometry kimi --mps on \
      --json "$OUT/installed-w4.json" --junit "$OUT/installed-w4.xml"
    run_expect "installed example plugin w2" 0 --world 2 --kernel "$dir/libdcp_example_plugin.so" \
      --json "$OUT/installed-plugin-w2.json"
    local k
    for k in 0 1 2; do
      "$BIN" --world 2 --suite smoke --shard "$k/3" --json "$OUT/installed-shard-$k.json" -q \
        >"$OUT/installed-shard-$k.log" 2>&1
    done
    run_expect "installed shards merged" 0 merge "$OUT"/installed-shard-{0,1,2}.json \
      --json "$OUT/installed-merged.json" --junit "$OUT/installed-merged.xml"
    BIN=$saved
  fi
  rm -rf "$prefix"
}

step_perf() {  # both checkers side by side, same machine, same seed; then the table
  local start=$SECONDS rc w check
  PERF_DURATION=${PERF_DURATION:-10s}
  local r suffix
  # PERF_ROUNDS (default 1): rounds of every run, interleaved (ci/perf.py takes medians).
  for r in $(seq "${PERF_ROUNDS:-1}"); do
    suffix=$([[ $r == 1 ]] || echo "-r$r")
    for w in ${PERF_WORLDS:-8 4 2}; do
      for check in cpu gpu; do
        run_expect "perf stress w$w $check$suffix" 0 stress --world "$w" --geometry kimi --mps on \
          --duration "$PERF_DURATION" --seed 11 --check "$check" -v \
          --json "$OUT/perf-stress-w$w-$check$suffix.json"
      done
    done
  done
  # The exchange alone (graph replays of the op, no check): the physical floor.
  for w in ${PERF_WORLDS:-8 4 2}; do
    "$BIN" bench --world "$w" --geometry kimi --mps on --allow-shared-gpu \
      --json "$OUT/perf-bench-w$w.json" >"$OUT/perf-bench-w$w.log" 2>&1
  done
  python3 ci/perf.py "$OUT" | tee "$OUT/perf.md"
  rc=${PIPESTATUS[0]}
  record "perf table" "$rc" $((SECONDS - start)) "$OUT/perf.md"
}

step_perfdiag() {  # what bounds the device-checked run: one knob off at a time, then steps timed
  local start=$SECONDS v w
  local d=${PERF_DURATION:-10s}
  for w in ${DIAG_WORLDS:-8 4}; do
    # The default run and the CPU checker's are perf's (run perf first).
    # NAME:ENV:ARGS. sync-spin: the host spins on the device (wake-up latency
    # off the run, host CPU per call up); check-twice, prep-twice: that step
    # launched twice per call (its marginal cost in the real run); phase-cpu:
    # the phases in the main thread's CPU time (where the host CPU per call goes).
    for v in "observe-off::--observe off" "mstress-off::--mstress off" \
      "both-off::--observe off --mstress off" "sync-spin:DCP_SYNC=spin:" \
      "check-twice:DCP_STEP_TWICE=check:" "prep-twice:DCP_STEP_TWICE=prep:" \
      "phase-cpu:DCP_PHASE_CLOCK=cpu:"; do
      local name=${v%%:*} rest=${v#*:}
      [[ -z ${DIAG_ONLY:-} || " $DIAG_ONLY " == *" $name "* ]] || continue  # DIAG_ONLY="NAME ..."
      # shellcheck disable=SC2086
      env ${rest%%:*} "$BIN" stress --world "$w" --geometry kimi --mps on --duration "$d" --seed 11 \
        ${rest#*:} --json "$OUT/perfdiag-w$w-$name.json" >"$OUT/perfdiag-w$w-$name.log" 2>&1
    done
  done
  # Every step of a call synchronised and timed (DCP_TRACE_STEPS=0): its GPU
  # completion time alone, without overlap (serialised, so slower overall).
  DCP_TRACE_STEPS=0 "$BIN" stress --world 4 --geometry kimi --mps on --duration 3s --seed 11 \
    --observe off --json "$OUT/perfdiag-trace.json" >"$OUT/perfdiag-trace.log" 2>"$OUT/perfdiag-trace.err"
  if [[ ${DIAG_NSYS:-1} == 0 ]]; then
    echo "nsys: skipped (DIAG_NSYS=0)" >"$OUT/perfdiag-nsys.txt"
  elif command -v nsys >/dev/null 2>&1; then
    timeout 90 nsys profile -t cuda -o "$OUT/perfdiag" --force-overwrite true "$BIN" stress --world 4 \
      --geometry kimi --mps on --duration 3s --seed 11 --observe off >"$OUT/perfdiag-nsys.log" 2>&1 &&
      timeout 60 nsys stats -r cuda_gpu_kern_sum,cuda_api_sum "$OUT/perfdiag.nsys-rep" >"$OUT/perfdiag-nsys.txt" 2>&1
    rm -f "$OUT/perfdiag.nsys-rep" "$OUT/perfdiag.sqlite"
  else
    echo "nsys: not installed" >"$OUT/perfdiag-nsys.txt"
  fi
  python3 ci/perf.py --diag "$OUT" | tee "$OUT/perfdiag.md"
  record "perf diagnosis" "${PIPESTATUS[0]}" $((SECONDS - start)) "$OUT/perfdiag.md"
}

# Does an execution-affinity context get more SMs than the rank's MPS share?
# (tests/gpu_sm_reach: the SMs one kernel reaches, primary, plain and
# affinity contexts, the last asking for every SM it sees, and what the
# affinity context shares with the primary one), alone and on a 12.5% share.
step_smreach() {
  local start=$SECONDS rc probe=$BUILD_DIR/tests/gpu_sm_reach
  { echo "== alone"; "$probe"; } >"$OUT/smreach.txt" 2>&1
  rc=$?
  if mps_start; then
    { echo "== MPS, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12.5"
      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12.5 "$probe"; } >>"$OUT/smreach.txt" 2>&1 || rc=1
    mps_stop
  else
    rc=1
  fi
  cat "$OUT/smreach.txt"
  record "SMs reached (affinity context)" "$rc" $((SECONDS - start)) "$OUT/smreach.txt"
}

step_checkbench() {  # the device check and the preparation alone, timed; ncu on them
  local start=$SECONDS rc bench=$BUILD_DIR/tests/gpu_check_bench
  "$bench" >"$OUT/checkbench.txt" 2>&1
  rc=$?
  cat "$OUT/checkbench.txt"
  record "check bench" "$rc" $((SECONDS - start)) "$OUT/checkbench.txt"
  # The same on one rank's share of the SMs, as stress --mps on gives it
  # (mps_thread_percentage: 50, 25, 12.5 at worlds 2, 4, 8), alone on the GPU.
  start=$SECONDS
  local pct
  if mps_start; then
    rc=0
    for pct in 50 25 12.5; do
      echo "== MPS, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct" >>"$OUT/checkbench-mps.txt"
      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct "$bench" --reps 100 >>"$OUT/checkbench-mps.txt" 2>&1 || rc=1
    done
    mps_stop
  else
    rc=1
  fi
  cat "$OUT/checkbench-mps.txt"
  record "check bench on an MPS share" "$rc" $((SECONDS - start)) "$OUT/checkbench-mps.txt"
  [[ ${CHECKBENCH_NCU:-1} == 1 ]] || return  # CHECKBENCH_NCU=0: no Nsight Compute
  command -v ncu >/dev/null 2>&1 || { echo "ncu: not installed" >"$OUT/checkbench-ncu.txt"; return; }
  start=$SECONDS
  timeout 90 ncu -k 'regex:check_call|call_prep_kernel' --section SpeedOfLight \
    --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis \
    "$bench" --only 4,128 --reps 2 >"$OUT/checkbench-ncu.txt" 2>&1
  rc=$?
  record "check bench ncu (W=4 T=128)" "$rc" $((SECONDS - start)) "$OUT/checkbench-ncu.txt"
}

# Where the check kernel's time goes, per SASS line: Nsight Compute's source
# counters (instructions executed, warp stall samples) for check_call at
# W = 8, T = 1 and T = 128, exported as CSV with the SASS, and the SASS itself.
step_checkprofile() {
  local start=$SECONDS rc=0 bench=$BUILD_DIR/tests/gpu_check_bench t
  command -v ncu >/dev/null 2>&1 || { record "check profile" 1 0 "ncu: not installed"; return; }
  for t in 1 128; do
    timeout 120 ncu -k 'regex:check_call' --launch-count 1 --section SourceCounters \
      --section WarpStateStats --section SpeedOfLight --section Occupancy --import-source yes \
      -f -o "$OUT/checkprofile-t$t" "$bench" --only "8,$t" --reps 1 >"$OUT/checkprofile-t$t.log" 2>&1 || rc=1
    ncu -i "$OUT/checkprofile-t$t.ncu-rep" --page source --csv --print-source sass \
      >"$OUT/checkprofile-t$t-sass.csv" 2>&1 || rc=1
    ncu -i "$OUT/checkprofile-t$t.ncu-rep" --page details >"$OUT/checkprofile-t$t.txt" 2>&1 || rc=1
  done
  command -v cuobjdump >/dev/null 2>&1 &&
    cuobjdump -sass "$BUILD_DIR/kernels/CMakeFiles/dcp_kernels.dir/device_check.cu.o" \
      >"$OUT/check_call.sass" 2>&1
  record "check profile (ncu source, W=8)" "$rc" $((SECONDS - start)) "$OUT/checkprofile-t*"
}

step_check() {  # the device checker against the CPU checker
  local c
  for c in gpu cpu; do
    run_expect "check $c w2" 0 --world 2 --check "$c" --json "$OUT/check-$c-w2.json"
    run_expect "check $c w4 kimi mps" 0 --world 4 --geometry kimi --mps on --check "$c" \
      --json "$OUT/check-$c-w4.json"
  done
  DCP_TEST_CHECKER_DISAGREE=1 run_expect "check skewed verdict" 3 --world 2 \
    --json "$OUT/check-skewed.json"
  run_expect "check broken on device" 1 --world 2 --mutant drop-last-odd-token \
    --json "$OUT/check-broken.json"
  # The compiled check kernel against the CPU checker on badly broken outputs.
  local start=$SECONDS rc
  "$BUILD_DIR/tests/gpu_check_agree" >"$OUT/check-agree.txt" 2>&1
  rc=$?
  record "check agrees on broken outputs" "$rc" $((SECONDS - start)) "$(tail -n 1 "$OUT/check-agree.txt")"
  python3 - "$OUT" <<'PY' | tee "$OUT/check-summary.txt"
import json, sys
out = sys.argv[1]
for name in ("check-gpu-w2", "check-cpu-w2", "check-gpu-w4", "check-cpu-w4", "check-skewed", "check-broken"):
    try:
        r = json.load(open(f"{out}/{name}.json"))
    except (OSError, ValueError) as e:
        print(f"{name}: no report ({e})"); continue
    k = r["phases"]["check"]
    print(f"{name}: {r['verdict']}; device {k['device_calls']}, audited {k['audited_calls']}, "
          f"cpu {k['cpu_calls']}, disagreements {k['disagreements']}")
    for c in r["cases"]:
        if c["status"] != "pass" and c["status"] != "skipped":
            print(f"  {c.get('case_id', c.get('id', '?'))}: {c.get('status')}: {str(c.get('message', ''))[:300]}")
            break
PY
}

step_checkself() {  # selftest with either checker: the same mutants detected
  local c
  for c in gpu cpu; do
    run_expect "check $c selftest w2" 0 selftest --world 2 --fast --no-upstream --check "$c" \
      --json "$OUT/check-$c-selftest.json"
  done
  python3 - "$OUT" <<'PY' | tee "$OUT/checkself-summary.txt"
import json, sys
out = sys.argv[1]
seen = {}
for c in ("gpu", "cpu"):
    try:
        r = json.load(open(f"{out}/check-{c}-selftest.json"))
    except (OSError, ValueError) as e:
        print(f"selftest --check {c}: no report ({e})"); continue
    seen[c] = {m["name"]: m.get("verdict") for m in r.get("mutants", [])}
    print(f"selftest --check {c}: {r.get('verdict')}: " + ", ".join(f"{k}={v}" for k, v in seen[c].items()))
if len(seen) == 2:
    print("same verdicts with either checker:", seen["gpu"] == seen["cpu"])
PY
}

# Every step the dispatch below knows (one list: the check and the message).
known="build unit test demo plugin families pressure observe install litmus memstress perf perfdiag sanitize dump check checkbench checkprofile checkself smreach"
for s in "${steps[@]}"; do
  [[ " $known " == *" $s "* ]] || { echo "ci/gpu.sh: unknown step '$s' (steps: $known)" >&2; exit 2; }
done

for s in "${steps[@]}"; do
  echo "== $s ($(date -u +%H:%M:%S))"
  case $s in
    build) step_build ;;
    unit) step_ctest unit -LE gpu ;;
    test) step_ctest test-gpu -L gpu ;;
    demo) step_demo ;;
    plugin) step_plugin ;;
    families) step_families ;;
    pressure) step_pressure ;;
    observe) step_observe ;;
    litmus) step_litmus ;;
    memstress) step_memstress ;;
    install) step_install ;;
    perf) step_perf ;;
    perfdiag) step_perfdiag ;;
    check) step_check ;;
    checkbench) step_checkbench ;;
    checkprofile) step_checkprofile ;;
    checkself) step_checkself ;;
    smreach) step_smreach ;;
    sanitize) step_sanitize ;;
    dump) step_dump ;;
  esac
done

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>/dev/null ||
  echo "no nvidia-smi" >"$OUT/gpu.txt"
echo
echo "== summary ($(head -n 1 "$OUT/gpu.txt"); logs in $OUT)"
printf '%s\n' "${summary[@]}"
# GPU_TAR=FILE: every log and report of $OUT in one archive (the device tool
# brings back a few files only: run with OUT elsewhere and GPU_TAR under its $OUT).
[[ -z ${GPU_TAR:-} ]] || tar czf "$GPU_TAR" -C "$OUT" . || status=1
exit $status
