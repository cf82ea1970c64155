#!/usr/bin/env bash
# `dcp-check bench` on the host backend: refused with exit 2 and a message
# saying bench needs the GPU backend (CPU-model timings mean nothing), before
# any worker starts. Bad bench flags are usage errors too.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
PID=0
RC=0

# Runs dcp-check (not through `timeout`, so $! is the supervisor itself) and
# polls it with a deadline; RC = its exit code, 124 when killed at the deadline.
run_bin() {  # run_bin ARGS...
  "$BIN" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null &
  PID=$!
  local deadline=$((SECONDS + 60))
  while kill -0 "$PID" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.05; done
  if kill -0 "$PID" 2>/dev/null; then
    kill -KILL "$PID"
    wait "$PID" 2>/dev/null
    RC=124
  else
    wait "$PID"
    RC=$?
  fi
}

# What run PID left behind: its names carry its run id "<supervisor pid>-<8 hex>"
# (shared memory /dev/shm/dcp-check-<run id>-*, run directory dcp-check.<pid>.*).
leftovers() {
  local what=""
  ls /dev/shm 2>/dev/null | grep -Eq "^dcp-check-${PID}-[0-9a-f]{8}-" && what+=" shm"
  ls -d "${TMPDIR:-/tmp}/dcp-check.${PID}."* /tmp/dcp-check."${PID}".* >/dev/null 2>&1 &&
    what+=" run-dir"
  echo "$what"
}

expect() {  # expect CODE PATTERN DESCRIPTION -- ARGS...
  local want=$1 pattern=$2 what=$3
  shift 4
  run_bin "$@"
  local left
  left=$(leftovers)
  if [[ $RC -ne $want ]]; then
    echo "FAIL exit $RC (want $want): $what: dcp-check $*"
    tail -5 "$WORK/out" "$WORK/err"
    failures=$((failures + 1))
  elif ! grep -q -- "$pattern" "$WORK/err"; then
    echo "FAIL: $what: stderr lacks '$pattern':"
    cat "$WORK/err"
    failures=$((failures + 1))
  elif [[ -n $left ]]; then  # nothing may be left behind by a refused bench
    echo "FAIL: $what: run $PID left behind:$left"
    failures=$((failures + 1))
  else
    echo "ok   exit $RC: $what"
  fi
}

expect 2 "bench needs the GPU backend" "bench --backend host is refused" -- \
  bench --backend host --world 2
expect 2 "bench needs the GPU backend" "even with --allow-shared-gpu" -- \
  bench --backend host --world 2 --allow-shared-gpu --tokens 1
expect 2 "max_tokens" "a token count above max_tokens" -- bench --world 2 --tokens 1,100000
expect 2 "--repeats 0" "zero repeats" -- bench --world 2 --repeats 0
expect 2 "--impl" "an unknown impl" -- bench --world 2 --impl fast
"$BIN" bench --help >"$WORK/help" 2>&1 && grep -q -- "--allow-shared-gpu" "$WORK/help" &&
  echo "ok   bench --help lists --allow-shared-gpu" ||
  { echo "FAIL: bench --help"; failures=$((failures + 1)); }
[[ $failures -eq 0 ]] && echo "e2e_bench_host: all passed"
exit $((failures > 0))
