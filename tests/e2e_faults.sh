#!/usr/bin/env bash
# Fault paths of the real binary on the host backend: an injected
# crash, hang, stall, corruption, CUDA error and OOM, and Ctrl-C / SIGTERM.
# Each must end within its bound with the right exit code and a verdict naming
# rank and cause, and leave nothing behind: no worker processes, no
# /dev/shm/dcp-check-<pid>-* segments, no run directory or socket.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
HOST=(--backend host --world 4 --geometry tiny --suite smoke)
failures=0
PID=0
RC=0
ELAPSED=0

fail() {
  echo "FAIL $*"
  sed 's/^/    out: /' "$WORK/out" | tail -12
  sed 's/^/    err: /' "$WORK/err" | tail -5
  failures=$((failures + 1))
}

start() {  # start ARGS...: runs dcp-check in the background, PID = the supervisor
  T0=$(date +%s.%N)
  : >"$WORK/out"  # emptied here, not only by the child, so no poll sees the last run's output
  : >"$WORK/err"
  "$BIN" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null &
  PID=$!
}

finish() {  # finish LIMIT_S: waits for PID (SIGKILL past the limit: RC 124)
  local limit=$1 deadline=$((SECONDS + $1 + 1))
  while kill -0 "$PID" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      kill -KILL "$PID" 2>/dev/null
      wait "$PID" 2>/dev/null
      RC=124
      ELAPSED=$limit
      return
    fi
    sleep 0.05
  done
  wait "$PID"
  RC=$?
  ELAPSED=$(awk -v a="$(date +%s.%N)" -v b="$T0" 'BEGIN { printf "%.2f", a - b }')
}

# Nothing of run $PID may survive it: workers carry --run-id <pid>-..., shared
# memory and the run directory carry the pid too.
# The worker processes of run PID (their command line carries --run-id PID-...),
# read from /proc so the test needs nothing beyond bash and coreutils.
run_workers() {
  # Workers' argv holds the run id "<pid>-<8 hex>" as one argument; the bracket
  # keeps this grep from matching its own command line.
  grep -zlE -- "^[${1:0:1}]${1:1}-[0-9a-f]{8}\$" /proc/[0-9]*/cmdline 2>/dev/null |
    sed -e 's|^/proc/||' -e 's|/cmdline$||'
  return 0
}

# What run PID still has: polled until nothing is left or 2 s have passed (the
# kernel reaps workers killed by PR_SET_PDEATHSIG a moment after the supervisor).
leftovers() {
  local what deadline=$((SECONDS + 2))
  while :; do
    what=""
    [[ -n $(run_workers "$PID") ]] && what+=" worker-processes"
    ls /dev/shm 2>/dev/null | grep -q "^dcp-check-${PID}-" && what+=" shm:$(ls /dev/shm | grep "^dcp-check-${PID}-" | tr '\n' ' ')"
    ls -d "${TMPDIR:-/tmp}/dcp-check.${PID}."* /tmp/dcp-check."${PID}".* >/dev/null 2>&1 && what+=" run-dir"
    if [[ -z $what ]] || ((SECONDS >= deadline)); then break; fi
    sleep 0.05
  done
  echo "$what"
}

# Polls until the output of run PID matches PATTERN; false after LIMIT_S.
wait_for_output() {  # wait_for_output PATTERN LIMIT_S
  local deadline=$((SECONDS + $2))
  until grep -Eq -- "$1" "$WORK/out" "$WORK/err" 2>/dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
}

check() {  # check NAME WANT_RC MAX_S PATTERN...: exit code, time bound, output, cleanup
  local name=$1 want=$2 max_s=$3
  shift 3
  local ok=1
  if [[ $RC -ne $want ]]; then fail "$name: exit $RC, want $want"; ok=0; fi
  if awk -v t="$ELAPSED" -v m="$max_s" 'BEGIN { exit !(t > m) }'; then fail "$name: took ${ELAPSED}s, bound ${max_s}s"; ok=0; fi
  for pattern in "$@"; do
    if ! grep -Eq -- "$pattern" "$WORK/out" "$WORK/err"; then fail "$name: output lacks /$pattern/"; ok=0; fi
  done
  local left
  left=$(leftovers)
  if [[ -n $left ]]; then
    fail "$name: left behind:$left"
    ok=0
    kill -KILL $(run_workers "$PID") 2>/dev/null  # do not poison later tests
  fi
  ((ok)) && echo "ok   $name (exit $RC in ${ELAPSED}s)"
  return 0
}

# A worker killed by a signal: the run ends at once, naming rank, case and
# signal; a dead worker is a harness failure (exit 3), not a kernel verdict.
start "${HOST[@]}" --timeout 10 --inject-fault crash:1:0:0
finish 20
check "crash (SIGSEGV in rank 1)" 3 8 "rank 1 \(pid [0-9]+\) killed by signal 11 \(SIGSEGV\)" "dcp2-|dcp4-"

# A crash in a later case: the cases before it passed and are reported.
start "${HOST[@]}" --timeout 10 --inject-fault crash:3:2:0 --json "$WORK/crash.json"
finish 20
check "crash in case 2 (rank 3)" 3 8 "rank 3 .*SIGSEGV"
python3 - "$WORK/crash.json" <<'PYEOF' || fail "crash: JSON report"
import json, sys
d = json.load(open(sys.argv[1]))
st = [c["status"] for c in d["cases"]]
assert st[:2] == ["pass", "pass"], st
assert st[2] == "error", st
assert all(s == "skipped" for s in st[3:]), st
PYEOF

# A rank that stops participating: its peers' bounded spin expires, the
# supervisor prints who waits on whom, exit 1, within deadline + 5 s.
start "${HOST[@]}" --timeout 3 --inject-fault hang:1:0:0
finish 20
check "hang (rank 1 never dispatches)" 1 8 "rank 0 waits for rank 1 \(slot [01], parity [01], epoch [0-9]+; flag holds [0-9]+\)" "rank 1 last signalled epoch"

# The same in the other group of a dcp2 case at world 4 (rank 3 waits for 2):
# smoke's case 1 is the second case; the hang hits only group 1.
start "${HOST[@]}" --timeout 3 --inject-fault hang:2:0:0
finish 20
check "hang (rank 2, global source numbering)" 1 8 "waits for rank 2 "

# A stall shorter than the deadline is not a failure.
start "${HOST[@]}" --timeout 10 --inject-fault stall:1:0:0
finish 40
check "stall (3 s, deadline 10 s) passes" 0 30 "^PASS"

# Corrupted output: caught by the checker, exit 1, with a replay line.
start "${HOST[@]}" --timeout 10 --inject-fault corrupt:2:1:0
finish 30
check "corrupt (rank 2, case 1)" 1 25 "^FAIL" "dcp-check replay w4-"

# CUDA error and OOM (host stand-ins): kernel faults, exit 1, naming the rank.
start "${HOST[@]}" --timeout 10 --inject-fault cuda-error:0:0:0
finish 20
check "cuda-error (rank 0)" 1 8 "rank 0: injected cuda_error"
start "${HOST[@]}" --timeout 10 --inject-fault oom:3:1:0
finish 20
check "oom (rank 3, case 1)" 1 8 "rank 3: injected oom"

# Ctrl-C in the middle of a case (a hang holds it there): torn down at once,
# partial reports written, exit 130; SIGTERM likewise with 143. The signal
# comes once case 1 of 5 has passed (-v prints it): case 2, where rank 1 hangs,
# is then held by the 60 s deadline.
for sig in INT TERM; do
  [[ $sig == INT ]] && want=130 || want=143
  rm -f "$WORK/partial.json" "$WORK/partial.xml"
  start "${HOST[@]}" -v --timeout 60 --inject-fault hang:1:1:0 --json "$WORK/partial.json" --junit "$WORK/partial.xml"
  wait_for_output '^PASS +\[1/5\]' 20 || fail "SIG$sig: case 1 did not pass within 20 s"
  T0=$(date +%s.%N)
  kill -s "$sig" "$PID"
  finish 10
  check "SIG$sig during a case" "$want" 5 "SIG$sig"
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$WORK/partial.json" ||
    fail "SIG$sig: no partial JSON report that parses"
  [[ -s $WORK/partial.xml ]] || fail "SIG$sig: no partial JUnit report"
done

# The supervisor itself SIGKILLed mid-run: its workers die with it
# (PR_SET_PDEATHSIG), and no name of the run exists after start-up.
start --backend host --world 4 --geometry tiny --suite default --timeout 10
started=0
deadline=$((SECONDS + 10))
while ((SECONDS < deadline)); do  # until start-up is over: workers up, run directory gone
  if [[ -n $(run_workers "$PID") ]] &&
    ! ls -d "${TMPDIR:-/tmp}/dcp-check.$PID."* /tmp/dcp-check."$PID".* >/dev/null 2>&1; then
    started=1
    break
  fi
  sleep 0.05
done
((started)) || fail "supervisor SIGKILLed: start-up not over within 10 s"
T0=$(date +%s.%N)
kill -KILL "$PID"
finish 5
check "supervisor SIGKILLed" 137 2

if ((failures)); then
  echo "$failures fault-path check(s) failed"
  exit 1
fi
echo "all fault paths end in time, with a verdict, and leave nothing behind"
