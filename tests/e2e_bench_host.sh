#!/usr/bin/env bash
# `dcp-check bench` on the host backend: refused with exit 2 and a message
# saying bench needs the GPU backend (CPU-model timings mean nothing), before
# any worker starts. Bad bench flags are usage errors too.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0

expect() {  # expect CODE PATTERN DESCRIPTION -- ARGS...
  local want=$1 pattern=$2 what=$3
  shift 4
  timeout 60 "$BIN" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
  local rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL exit $rc (want $want): $what: dcp-check $*"
    tail -5 "$WORK/out" "$WORK/err"
    failures=$((failures + 1))
  elif ! grep -q -- "$pattern" "$WORK/err"; then
    echo "FAIL: $what: stderr lacks '$pattern':"
    cat "$WORK/err"
    failures=$((failures + 1))
  else
    echo "ok   exit $rc: $what"
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
# Nothing may be left behind by a refused bench.
if ls /dev/shm 2>/dev/null | grep -q "dcp-check-$$-"; then
  echo "FAIL: shared memory left behind"
  failures=$((failures + 1))
fi
[[ $failures -eq 0 ]] && echo "e2e_bench_host: all passed"
exit $((failures > 0))
