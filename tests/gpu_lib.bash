# shellcheck shell=bash
# Shared helpers of the GPU end-to-end tests (tests/gpu_*.sh), sourced by each.
# Named .bash so that the gpu_*.sh glob of tests/CMakeLists.txt does not
# register it as a test of its own.
#
# Conventions (the same as the host tests/e2e_*.sh):
# - $1 is the dcp-check binary; outputs go to a private temp dir $WORK, removed
#   on exit; every dcp-check call has a deadline (`timeout`, or our own
#   watchdog for background runs), so a hung kernel fails the test instead of
#   hanging CTest.
# - One "PASS: ..." or "FAIL: ..." line per check; the tail of the run's
#   output is printed under a failure; exit 1 if any check failed.
# - No GPU: print "SKIPPED: <test>: no GPU on this machine" and exit 77 (CTest
#   reports it as skipped, by name). Never pass silently.
# - Run ids: the supervisor of pid P names its workers `--run-id P-<hex>`, its
#   shared memory /dev/shm/dcp-check-P-* and its run directory
#   $TMPDIR/dcp-check.P.<hex> (docs/DESIGN.md); leftovers are found by P.

set -u

# Seconds since the epoch with fractions (no bc on some machines: awk does
# the arithmetic).
gpu_now() {
  if [[ -n ${EPOCHREALTIME:-} ]]; then echo "${EPOCHREALTIME/,/.}"; else date +%s.%N; fi
}
float_sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
float_gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# GPUs CUDA will show dcp-check: nvidia-smi's list, cut down by
# CUDA_VISIBLE_DEVICES when that is set (empty or -1 hides every GPU).
gpu_count() {
  local listing n
  command -v nvidia-smi >/dev/null 2>&1 || { echo 0; return; }
  listing=$(nvidia-smi -L 2>/dev/null) || { echo 0; return; }
  n=$(grep -c '^GPU [0-9]' <<<"$listing")
  if [[ -n ${CUDA_VISIBLE_DEVICES+set} ]]; then
    local cvd=${CUDA_VISIBLE_DEVICES// /}
    local -a parts=()
    if [[ -z $cvd || $cvd == -1* ]]; then
      n=0
    else
      IFS=, read -r -a parts <<<"$cvd"
      ((${#parts[@]} < n)) && n=${#parts[@]}
    fi
  fi
  echo "$n"
}

# The first GPU CUDA would use, as a CUDA_VISIBLE_DEVICES value.
first_gpu() {
  if [[ -n ${CUDA_VISIBLE_DEVICES:-} ]]; then
    echo "${CUDA_VISIBLE_DEVICES%%,*}"
  else
    echo 0
  fi
}

# gpu_init TEST_NAME "$@": skip (77) without a GPU, else set BIN, WORK,
# NUM_GPUS and the counters, and install the cleanup.
gpu_init() {
  TEST_NAME=$1
  shift
  NUM_GPUS=$(gpu_count)
  if ((NUM_GPUS < 1)); then
    local why="nvidia-smi -L lists none"
    [[ -n ${CUDA_VISIBLE_DEVICES+set} ]] && why+=", or CUDA_VISIBLE_DEVICES=\"$CUDA_VISIBLE_DEVICES\" hides them"
    echo "SKIPPED: $TEST_NAME: no GPU on this machine ($why)"
    exit 77
  fi
  BIN=${1:-}
  if [[ -z $BIN || ! -x $BIN ]]; then
    echo "FAIL: $TEST_NAME: usage: $0 path/to/dcp-check (got '${BIN}', not an executable)"
    exit 1
  fi
  BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
  if ! command -v python3 >/dev/null 2>&1; then
    echo "FAIL: $TEST_NAME: python3 is needed to read the JSON and JUnit reports"
    exit 1
  fi
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/${TEST_NAME}.XXXXXX")
  FAILURES=0
  CHECKS=0
  STARTED_PIDS=()
  trap gpu_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  echo "== $TEST_NAME: $NUM_GPUS GPU(s) visible ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)); binary $BIN"
}

# Kills what a background run of ours may have left (only runs this script
# started and has not reaped yet, by pid), then removes the temp dir.
gpu_cleanup() {
  local pid
  for pid in "${STARTED_PIDS[@]}"; do
    kill_run "$pid"
  done
  [[ -n ${WORK:-} ]] && rm -rf "$WORK"
}

pass() {
  CHECKS=$((CHECKS + 1))
  echo "PASS: $*"
}
fail() {
  CHECKS=$((CHECKS + 1))
  FAILURES=$((FAILURES + 1))
  echo "FAIL: $*"
}

# show_tail NAME: the last lines of NAME's stdout and stderr, indented.
show_tail() {
  local name=$1 lines=${2:-25}
  if [[ -s $WORK/$name.out ]]; then tail -n "$lines" "$WORK/$name.out" | sed 's/^/    stdout: /'; fi
  if [[ -s $WORK/$name.err ]]; then tail -n 10 "$WORK/$name.err" | sed 's/^/    stderr: /'; fi
}

# run_dcp NAME LIMIT_S ARGS...: runs dcp-check in the foreground under
# `timeout`; sets RC (124/137: it ran past LIMIT_S) and WALL (seconds).
# Output in $WORK/NAME.out and $WORK/NAME.err.
run_dcp() {
  local name=$1 limit=$2 t0
  shift 2
  echo "---- $name: dcp-check $* (limit ${limit} s)"
  t0=$(gpu_now)
  timeout -k 10 "$limit" "$BIN" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" </dev/null
  RC=$?
  WALL=$(float_sub "$(gpu_now)" "$t0")
  if ((RC == 124 || RC == 137)); then echo "    (still running after ${limit} s: killed)"; fi
}

# expect_rc NAME WANT [WHAT]: one check on RC; prints the tails when it fails.
expect_rc() {
  local name=$1 want=$2 what=${3:-$1}
  if ((RC == want)); then
    pass "$what: exit $RC in ${WALL} s"
    return 0
  fi
  fail "$what: exit $RC, want $want (after ${WALL} s)"
  show_tail "$name"
  return 1
}

# expect_output NAME WHAT ERE...: every extended regex must match a line of
# NAME's stdout or stderr.
expect_output() {
  local name=$1 what=$2 pattern ok=1
  shift 2
  for pattern in "$@"; do
    if ! grep -Eq -- "$pattern" "$WORK/$name.out" "$WORK/$name.err"; then
      fail "$what: the output lacks /$pattern/"
      ok=0
    fi
  done
  if ((ok)); then
    pass "$what"
  else
    show_tail "$name"
  fi
}

# expect_pass_verdict NAME NUM_CASES: the verdict line says every one of the
# NUM_CASES cases passed, on the GPU backend.
expect_pass_verdict() {  # expect_pass_verdict NAME CASES [SKIPPED]
  local name=$1 want=$2 skipped=${3:-0} line
  line=$(grep -E '^(PASS|FAIL|HARNESS ERROR|INTERRUPTED|USAGE ERROR)' "$WORK/$name.out" | tail -n 1)
  if [[ $line =~ ^PASS:\ ([0-9]+)\ cases:\ ([0-9]+)\ passed,\ 0\ failed,\ 0\ errors,\ ([0-9]+)\ skipped.*\[backend\ gpu\] ]] &&
    [[ ${BASH_REMATCH[1]} == "$want" && ${BASH_REMATCH[2]} == $((want - skipped)) &&
      ${BASH_REMATCH[3]} == "$skipped" ]]; then
    pass "$name: verdict '$line'"
  else
    fail "$name: verdict '$line', want 'PASS: $want cases: $((want - skipped)) passed, 0 failed, 0 errors, $skipped skipped ... [backend gpu]'"
    show_tail "$name"
  fi
}

# num_cases ARGS...: how many cases `dcp-check list ARGS...` selects (no GPU used).
num_cases() {
  timeout 60 "$BIN" list "$@" 2>/dev/null | grep -c .
}

# start_dcp NAME ARGS...: runs dcp-check in the background; PID is the
# supervisor. finish_dcp enforces the deadline.
start_dcp() {
  local name=$1
  shift
  echo "---- $name: dcp-check $* (background)"
  T0=$(gpu_now)
  "$BIN" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" </dev/null &
  PID=$!
  STARTED_PIDS+=("$PID")
}

# finish_dcp LIMIT_S: waits for PID; past LIMIT_S it is killed (RC 124). Sets
# RC and ELAPSED (seconds since T0, which callers may reset to time a
# signal). Calls the function named by $POLL_HOOK (if set) while waiting.
finish_dcp() {
  local limit=$1 deadline
  deadline=$(awk -v t="$(gpu_now)" -v l="$limit" 'BEGIN { printf "%.3f", t + l }')
  while kill -0 "$PID" 2>/dev/null; do
    if float_gt "$(gpu_now)" "$deadline"; then
      echo "    (still running after ${limit} s: killed)"
      kill_run "$PID"
      RC=124
      ELAPSED=$(float_sub "$(gpu_now)" "$T0")
      WALL=$ELAPSED
      return
    fi
    if [[ -n ${POLL_HOOK:-} ]]; then "$POLL_HOOK"; fi
    sleep 0.1
  done
  wait "$PID"
  RC=$?
  STARTED_PIDS=() # reaped: its pid may be reused from now on, never signal it again
  ELAPSED=$(float_sub "$(gpu_now)" "$T0")
  WALL=$ELAPSED
}

# workers_of PID: pids of the worker processes of run PID.
workers_of() {
  pgrep -f -- "--run-id ${1}-"
}

# kill_run PID: SIGKILL run PID's workers (found by their run id) and, while
# it is an unreaped child of ours, the supervisor itself.
kill_run() {
  local pid=$1 w
  if [[ " ${STARTED_PIDS[*]} " == *" $pid "* ]]; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    STARTED_PIDS=()
  fi
  for w in $(workers_of "$pid"); do kill -KILL "$w" 2>/dev/null; done
}

# leftovers PID: what run PID left behind (empty: nothing): worker processes,
# shared-memory segments, the run directory (socket, MPS pipe and log dirs).
leftovers() {
  local pid=$1 what="" shm dirs
  sleep 0.3 # the kernel reaps workers killed by PR_SET_PDEATHSIG asynchronously
  if workers_of "$pid" >/dev/null; then what+=" worker-processes($(workers_of "$pid" | tr '\n' ' '))"; fi
  shm=$(find /dev/shm -maxdepth 1 -name "dcp-check-${pid}-*" 2>/dev/null | tr '\n' ' ')
  [[ -n $shm ]] && what+=" shared-memory($shm)"
  dirs=$(find "${TMPDIR:-/tmp}" /tmp -maxdepth 1 -name "dcp-check.${pid}.*" 2>/dev/null | sort -u | tr '\n' ' ')
  [[ -n $dirs ]] && what+=" run-dir($dirs)"
  echo "$what"
}

# expect_clean WHAT: nothing of run $PID is left; cleans up if something is.
expect_clean() {
  local what=$1 left
  left=$(leftovers "$PID")
  if [[ -z $left ]]; then
    pass "$what: no worker process, shared-memory segment or run directory left"
  else
    fail "$what: left behind:$left"
    kill_run "$PID"
  fi
}

# expect_within WHAT MAX_S: ELAPSED <= MAX_S.
expect_within() {
  local what=$1 max_s=$2
  if float_gt "$ELAPSED" "$max_s"; then
    fail "$what: took ${ELAPSED} s, bound ${max_s} s"
  else
    pass "$what: ended in ${ELAPSED} s (bound ${max_s} s)"
  fi
}

# py_checks NAME ARGS... <<'PY' ... PY: runs the python on stdin with ARGS,
# after a prelude that defines check(ok, what) (prints PASS/FAIL) and imports
# json, sys and ET (xml.etree.ElementTree). Its checks count as ours; an
# exception counts as one failure.
py_checks() {
  local name=$1 rc
  shift
  {
    cat <<'PRELUDE'
import json, re, sys
import xml.etree.ElementTree as ET
_bad = [0]
def check(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what, flush=True)
    _bad[0] += not ok
PRELUDE
    cat
    printf '\nsys.exit(1 if _bad[0] else 0)\n'
  } >"$WORK/$name.py"
  python3 "$WORK/$name.py" "$@" >"$WORK/$name.py.out" 2>&1
  rc=$?
  cat "$WORK/$name.py.out"
  CHECKS=$((CHECKS + $(grep -c -E '^(PASS|FAIL): ' "$WORK/$name.py.out")))
  FAILURES=$((FAILURES + $(grep -c '^FAIL: ' "$WORK/$name.py.out")))
  if ((rc != 0)) && ! grep -q '^FAIL: ' "$WORK/$name.py.out"; then
    fail "$name: the python checks exited $rc"
  fi
}

# gpu_finish: the summary line and the exit code.
# A field-failure family on the GPU: the built-in kernel passes the cases
# `--filter FAMILY` selects at world 2, and the selftest catches MUTANT on
# `--filter CATCH` and not on `--filter MISS` (it survives them).
check_family() {  # check_family FAMILY MUTANT CATCH MISS
  local family=$1 mutant=$2 catch=$3 miss=$4 n
  n=$(num_cases --world 2 --filter "$family")
  run_dcp family 240 --world 2 --filter "$family"
  expect_rc family 0 "world 2 cases matching '$family' ($n)" && expect_pass_verdict family "$n"
  run_dcp mutant_in 300 selftest --world 2 --fast --no-upstream --filter "$catch" --mutants "$mutant"
  expect_rc mutant_in 0 "selftest --filter '$catch' catches $mutant" &&
    expect_output mutant_in "the table says detected" "$mutant.*detected"
  run_dcp mutant_out 600 selftest --world 2 --fast --no-upstream --filter "$miss" --mutants "$mutant"
  expect_rc mutant_out 1 "selftest --filter '$miss': $mutant survives" &&
    expect_output mutant_out "the table says SURVIVED" "$mutant.*SURVIVED"
}

gpu_finish() {
  if ((FAILURES)); then
    echo "== $TEST_NAME: FAILED: $FAILURES of $CHECKS checks failed"
    exit 1
  fi
  echo "== $TEST_NAME: all $CHECKS checks passed"
  exit 0
}
