#!/usr/bin/env bash
# CUDA MPS for ranks sharing a GPU. With every rank on one GPU
# (CUDA_VISIBLE_DEVICES is cut to the first GPU when there are more):
# - `--world 4 --geometry kimi --mps on` (the default suite) passes; the
#   terminal and the JSON report say MPS "on" (a private daemon), and this
#   run's own MPS control daemon was seen running;
# - after every exit path -- pass, injected corruption (exit 1), SIGKILL of a
#   random worker (exit 3), SIGINT to the supervisor (exit 130) -- no
#   nvidia-cuda-mps-control / nvidia-cuda-mps-server process of the run is
#   left (neither one whose environment names the run's pipe directory nor
#   any that was not running before this test), and no run directory (which
#   holds the private pipe and log directories), worker or shm segment;
# - `--mps off` runs the smoke suite, says "off", and starts no daemon;
# - the default suite at world 4 kimi time-sliced (`--mps off`), timed next
#   to the MPS run: prints `wall: mps=off X s, mps=on Y s`.
# Usage: gpu_mps.sh path/to/dcp-check
# shellcheck source=tests/gpu_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/gpu_lib.bash"
gpu_init gpu_mps "$@"
if ((NUM_GPUS > 1)); then
  CUDA_VISIBLE_DEVICES=$(first_gpu)
  export CUDA_VISIBLE_DEVICES
  echo "note: $NUM_GPUS GPUs: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES so that the ranks share one GPU"
fi
KIMI4=(--world 4 --geometry kimi)

if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
  run_dcp no_mps_binary 60 --world 2 --suite smoke --mps on
  expect_rc no_mps_binary 2 "--mps on without nvidia-cuda-mps-control on PATH is a usage error" &&
    expect_output no_mps_binary "the message names nvidia-cuda-mps-control" 'nvidia-cuda-mps-control'
  ((FAILURES)) && gpu_finish
  echo "SKIPPED: gpu_mps: nvidia-cuda-mps-control is not on PATH: MPS cannot run on this machine"
  exit 77
fi

mps_pids() {  # every MPS control daemon and server on the machine
  pgrep -f 'nvidia-cuda-mps-(control|server)'
}
mapfile -t BASE_MPS < <(mps_pids | sort)
((${#BASE_MPS[@]})) && echo "note: MPS processes already running before this test (not ours): ${BASE_MPS[*]}"

run_mps_pids() {  # MPS processes whose environment names run $1's directory
  local p
  for p in $(mps_pids); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
      grep -q "^CUDA_MPS_PIPE_DIRECTORY=.*/dcp-check\.${1}\."; then
      echo "$p"
    fi
  done
}

new_mps_pids() {  # MPS processes that were not running when this test began
  comm -13 <(printf '%s\n' "${BASE_MPS[@]}" | sort) <(mps_pids | sort) | grep .
}

declare -A SEEN_MPS=()
sample_mps() {  # POLL_HOOK: remembers this run's MPS processes while it runs
  local p
  for p in $(run_mps_pids "$PID"); do
    [[ -n ${SEEN_MPS[$p]:-} ]] || SEEN_MPS[$p]=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)
  done
}
POLL_HOOK=sample_mps

# expect_mps_seen WHAT: this run's private control daemon was running.
expect_mps_seen() {
  local what=$1 p list=""
  for p in "${!SEEN_MPS[@]}"; do list+="$p:${SEEN_MPS[$p]% } "; done
  if [[ $list == *"nvidia-cuda-mps-control -d"* ]]; then
    pass "$what: the run's private MPS daemon was running ($list)"
  else
    fail "$what: no MPS control daemon with this run's pipe directory was seen (seen: ${list:-none})"
  fi
}

# expect_no_mps WHAT: no MPS process of run $PID, nor any new one, is left.
expect_no_mps() {
  local what=$1 ours new i p
  for ((i = 0; i < 20; i++)); do  # up to 2 s for a quitting server to be reaped
    ours=$(run_mps_pids "$PID")
    new=$(new_mps_pids)
    [[ -z $ours && -z $new ]] && break
    sleep 0.1
  done
  if [[ -z $ours && -z $new ]]; then
    pass "$what: no nvidia-cuda-mps-control/-server process left"
    return
  fi
  fail "$what: MPS processes left: this run's [${ours//$'\n'/ }], new since the test began [${new//$'\n'/ }]"
  ps -o pid,ppid,etime,args -p "$(echo "$ours" "$new" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')" 2>/dev/null | sed 's/^/    /'
  for p in $ours; do kill -KILL "$p" 2>/dev/null; done  # ours: its pipe dir is this run's
}

# start_mps_run NAME ARGS...: starts a run and waits (up to 60 s) until its
# workers exist (the daemon starts before them), then a random 0.5-3 s more,
# so that a signal lands mid-suite.
start_mps_run() {
  local name=$1 i
  shift
  SEEN_MPS=()
  start_dcp "$name" "$@"
  for ((i = 0; i < 600; i++)); do
    sample_mps
    [[ -n $(workers_of "$PID") ]] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 0.5 + (r % 250) / 100 }')"
  sample_mps
}

# 1. The default suite at world 4 under MPS: passes, says so, cleans up. Its
# SM-pressure cases are skipped by name when the 4 ranks share one GPU
# (src/wire/pressure_rule.h); with more GPUs they run.
n=$(num_cases "${KIMI4[@]}")
n_skip=0
((NUM_GPUS == 1)) && n_skip=$(num_cases "${KIMI4[@]}" --filter press)
SEEN_MPS=()
start_dcp mps_on "${KIMI4[@]}" --mps on --json "$WORK/mps_on.json"
finish_dcp 300
WALL_ON=$ELAPSED
RC_ON=$RC
expect_rc mps_on 0 "world 4 kimi default suite ($n cases) with --mps on" &&
  expect_pass_verdict mps_on "$n" "$n_skip"
expect_output mps_on "pressure cases skipped by name" \
  "$( ((n_skip > 0)) && echo 'not run: SM pressure with 4 ranks' || echo '^PASS')"
expect_output mps_on "the terminal summary says MPS on" '^backend gpu, kernel direct \(built-in\), MPS on'
if [[ -s $WORK/mps_on.json ]]; then
  py_checks mps_on "$WORK/mps_on.json" "$n" "$n_skip" <<'PY'
report, n, n_skip = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
conf, env, counts = report["configuration"], report["environment"] or {}, report["counts"]
check(conf["mps"] == "on", f"JSON: configuration.mps = {conf['mps']!r}")
check(env.get("mps_mode", "").startswith("on") and "private daemon" in env.get("mps_mode", ""),
      f"JSON: environment.mps_mode = {env.get('mps_mode')!r} (want 'on: private daemon ...')")
check(env.get("backend") == "gpu" and env.get("ranks_share_gpu") is True,
      f"JSON: backend {env.get('backend')!r}, ranks share a GPU: {env.get('ranks_share_gpu')}")
check(counts["total"] == n and counts["passed"] == n - n_skip and counts["skipped"] == n_skip,
      f"JSON: {counts}, want {n - n_skip} of {n} passed, {n_skip} skipped")
print(f"note: JSON wall_s {report['wall_s']:.1f}")
PY
else
  fail "mps on: no JSON report"
fi
expect_mps_seen "mps on (pass)"
expect_clean "mps on (pass)"
expect_no_mps "mps on (pass)"

# 2. A kernel failure (injected corruption) under MPS: exit 1, daemon gone.
SEEN_MPS=()
start_dcp corrupt "${KIMI4[@]}" --suite smoke --mps on --inject-fault corrupt:2:1:0
finish_dcp 120
expect_rc corrupt 1 "injected corruption under MPS"
expect_output corrupt "corruption: FAIL verdict and a replay line that keeps --mps on" \
  '^FAIL' 'dcp-check replay w4-[^ ]+ .*--mps on'
expect_mps_seen "corrupt"
expect_clean "corrupt"
expect_no_mps "corrupt"

# 3. SIGKILL of a random worker mid-suite: a harness failure (exit 3) naming
# the rank, within 5 s plus the daemon's quit, and the daemon is gone. The
# full suite, so the run is still in its cases when the kill is due (the
# default suite's cases now take about 1.3 s).
start_mps_run kill "${KIMI4[@]}" --suite full --mps on --timeout 10
mapfile -t workers < <(workers_of "$PID")
if ! kill -0 "$PID" 2>/dev/null || ((${#workers[@]} == 0)); then
  finish_dcp 5
  fail "kill: the run was not running with workers when the kill was due (exit $RC)"
  show_tail kill
else
  victim=${workers[$((RANDOM % ${#workers[@]}))]}
  vrank=$(tr '\0' '\n' <"/proc/$victim/cmdline" | grep -A1 -x -- '--rank' | tail -n 1)
  echo "    SIGKILL worker pid $victim (rank $vrank)"
  kill -KILL "$victim"
  T0=$(gpu_now)
  finish_dcp 30
  expect_rc kill 3 "SIGKILL of rank $vrank under MPS"
  expect_within "kill" 10
  expect_output kill "kill: the verdict names rank $vrank and the kill" \
    "rank $vrank .*(killed by signal 9 \(SIGKILL\)|closed its connection)"
fi
expect_mps_seen "kill"
expect_clean "kill"
expect_no_mps "kill"

# 4. SIGINT to the supervisor mid-suite: exit 130, partial JSON, daemon gone.
start_mps_run sigint "${KIMI4[@]}" --suite full --mps on --json "$WORK/sigint.json"
if ! kill -0 "$PID" 2>/dev/null; then
  finish_dcp 5
  fail "sigint: the run ended before the signal was due (exit $RC)"
  show_tail sigint
else
  kill -INT "$PID"
  T0=$(gpu_now)
  finish_dcp 30
  expect_rc sigint 130 "SIGINT to the supervisor under MPS"
  expect_within "sigint" 10
  expect_output sigint "sigint: the verdict names SIGINT" 'SIGINT'
  if [[ -s $WORK/sigint.json ]]; then
    py_checks sigint "$WORK/sigint.json" <<'PY'
report = json.load(open(sys.argv[1]))
check(report["interrupted_by_signal"] == 2 and report["configuration"]["mps"] == "on",
      f"sigint: partial JSON: interrupted_by_signal {report['interrupted_by_signal']}, "
      f"mps {report['configuration']['mps']!r}")
PY
  else
    fail "sigint: no partial JSON report"
  fi
fi
expect_mps_seen "sigint"
expect_clean "sigint"
expect_no_mps "sigint"

# 5. --mps off: the smoke suite passes, says off, starts no daemon.
n=$(num_cases --world 2 --suite smoke)
SEEN_MPS=()
start_dcp mps_off_smoke --world 2 --suite smoke --mps off --json "$WORK/off.json"
finish_dcp 120
expect_rc mps_off_smoke 0 "world 2 smoke suite with --mps off" && expect_pass_verdict mps_off_smoke "$n"
if [[ -s $WORK/off.json ]]; then
  py_checks mps_off "$WORK/off.json" <<'PY'
report = json.load(open(sys.argv[1]))
mode = (report["environment"] or {}).get("mps_mode", "")
check(report["configuration"]["mps"] == "off" and mode.startswith("off"),
      f"mps off: JSON configuration.mps {report['configuration']['mps']!r}, environment.mps_mode {mode!r}")
PY
fi
if ((${#SEEN_MPS[@]} == 0)); then
  pass "mps off: no MPS daemon was started for the run"
else
  fail "mps off: MPS processes with the run's pipe directory: ${!SEEN_MPS[*]}"
fi
expect_clean "mps off"
expect_no_mps "mps off"

# 6. The same default suite time-sliced, for the wall-time comparison.
n=$(num_cases "${KIMI4[@]}")
SEEN_MPS=()
start_dcp mps_off "${KIMI4[@]}" --mps off
finish_dcp 420
WALL_OFF=$ELAPSED
expect_rc mps_off 0 "world 4 kimi default suite ($n cases) with --mps off (time-sliced)" &&
  expect_pass_verdict mps_off "$n"
expect_clean "mps off (default suite)"

echo "wall: mps=off $WALL_OFF s, mps=on $WALL_ON s"
if ((RC == 0 && RC_ON == 0)); then
  echo "note: world 4 kimi default suite ($n cases), one GPU: MPS is $(awk -v a="$WALL_OFF" -v b="$WALL_ON" 'BEGIN { printf "%.1f", a / b }')x faster (wall times include start-up)"
else
  echo "note: a timed run failed (mps=off exit $RC, mps=on exit $RC_ON): the times are not comparable"
fi

gpu_finish
