#!/usr/bin/env bash
# Kill a random worker with SIGKILL at a random moment of a host run, 20 times:
# every run must end within 5 s of the kill with a verdict that names
# the rank and the signal, and leave nothing behind (no worker processes, no
# /dev/shm/dcp-check-<pid>-*, no run directory).
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
RUNS=${KILL_RANDOM_RUNS:-20}
failures=0
done_runs=0
attempts=0

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
leftovers() {  # leftovers PID
  local pid=$1 what deadline=$((SECONDS + 2))
  while :; do
    what=""
    [[ -n $(run_workers "$pid") ]] && what+=" worker-processes"
    ls /dev/shm 2>/dev/null | grep -q "^dcp-check-${pid}-" && what+=" shared-memory"
    ls -d "${TMPDIR:-/tmp}/dcp-check.${pid}."* /tmp/dcp-check."${pid}".* >/dev/null 2>&1 && what+=" run-dir"
    if [[ -z $what ]] || ((SECONDS >= deadline)); then break; fi
    sleep 0.05
  done
  echo "$what"
}

# The random choices (kill moment, victim) come from $RANDOM, seeded here and
# printed, so a failing sequence can be redone with KILL_RANDOM_SEED.
SEED=${KILL_RANDOM_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
RANDOM=$SEED
echo "seed $SEED (rerun with KILL_RANDOM_SEED=$SEED)"

while ((done_runs < RUNS && attempts < 3 * RUNS)); do
  attempts=$((attempts + 1))
  "$BIN" --backend host --world 4 --geometry tiny --suite default --timeout 10 \
    >"$WORK/out" 2>"$WORK/err" </dev/null &
  pid=$!
  # A random moment: start-up, mid-case or between cases (0.02 .. 1.5 s). The
  # sleep is the moment chosen, not a wait for anything. ($RANDOM is read here,
  # not inside $(...), so the seeded sequence is the parent shell's.)
  r=$RANDOM
  sleep "$(awk -v r="$r" 'BEGIN { printf "%.3f", 0.02 + (r % 1480) / 1000 }')"
  mapfile -t workers < <(run_workers "$pid")
  if ((${#workers[@]} == 0)); then
    # Finished already or not spawned yet: not a kill test, try again.
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    continue
  fi
  victim=${workers[$((RANDOM % ${#workers[@]}))]}
  kill -KILL "$victim" 2>/dev/null
  t0=$(date +%s.%N)
  deadline=$((SECONDS + 6))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.02; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "FAIL run $((done_runs + 1)): no verdict 5 s after killing worker $victim"
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    kill -KILL $(run_workers "$pid") 2>/dev/null
    failures=$((failures + 1))
    done_runs=$((done_runs + 1))
    continue
  fi
  wait "$pid"
  rc=$?
  took=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
  done_runs=$((done_runs + 1))
  verdict=ok
  if awk -v t="$took" 'BEGIN { exit !(t > 5) }'; then verdict="took ${took}s"; fi
  if [[ $rc -eq 0 ]] && grep -q '^PASS' "$WORK/out"; then
    # The run finished between listing its workers and the kill: no test.
    done_runs=$((done_runs - 1))
    continue
  elif [[ $rc -ne 3 ]]; then
    verdict="exit $rc (want 3: a killed worker is a harness failure)"
  elif ! grep -Eq "killed by signal 9 \(SIGKILL\)|closed its connection" "$WORK/out" "$WORK/err"; then
    verdict="the verdict does not say the worker was killed"
  fi
  left=$(leftovers "$pid")
  [[ -n $left ]] && verdict="left behind:$left"
  if [[ $verdict == ok ]]; then
    echo "ok   run $done_runs: killed worker $victim, exit $rc after ${took}s"
  else
    echo "FAIL run $done_runs: killed worker $victim: $verdict"
    tail -5 "$WORK/out" | sed 's/^/    out: /'
    tail -3 "$WORK/err" | sed 's/^/    err: /'
    failures=$((failures + 1))
    kill -KILL $(run_workers "$pid") 2>/dev/null
  fi
done

if ((done_runs < RUNS)); then
  echo "FAIL: only $done_runs of $RUNS runs were still running when the kill came"
  exit 1
fi
if ((failures)); then
  echo "$failures of $RUNS random kills failed (seed $SEED)"
  exit 1
fi
echo "all $RUNS random kills ended with a verdict within 5 s and left nothing behind"
