#!/usr/bin/env bash
# Fault paths on the GPU backend, with the hidden test-only
# `--inject-fault KIND:RANK:CASE:OP` (src/app/options.cpp). Each run must end
# within its bound with the exit code the CLI defines, a verdict naming rank
# and cause, and leave nothing behind (no worker process, no
# /dev/shm/dcp-check-<pid>-* segment, no run directory):
# - hang on rank 1 with --timeout 3: exit 1 within 3 + 5 s + start-up, and the
#   output says who waits on whom: "rank 0 waits for rank 1 (slot S, parity
#   P, epoch E; flag holds F)" and what rank 1 last signalled;
# - crash (SIGSEGV) on rank 0: exit 3 (a dead worker is a harness failure,
#   README exit codes) within 5 s + start-up, naming rank 0 and the signal;
# - a real failing CUDA call and a real out-of-memory: exit 1, naming the rank
#   and the CUDA error; corrupted output: exit 1, FAIL and a replay line;
# - SIGINT / SIGTERM to the supervisor during a hung case: exit 130 / 143
#   within 5 s, partial JSON and JUnit reports written.
# Start-up is measured: the wall time of a clean world 2 smoke run.
# Usage: gpu_faults.sh path/to/dcp-check
# shellcheck source=tests/gpu_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/gpu_lib.bash"
gpu_init gpu_faults "$@"
SMOKE=(--world 2 --suite smoke)

# A clean run first: it must pass, and its wall time bounds the start-up
# (processes, CUDA contexts, IPC workspace) that the bounds below allow for.
run_dcp baseline 120 "${SMOKE[@]}"
expect_rc baseline 0 "baseline: world 2 smoke passes" || { gpu_finish; }
STARTUP=$(awk -v w="$WALL" 'BEGIN { printf "%.1f", (w < 1 ? 1 : w) }')
echo "note: start-up allowance ${STARTUP} s (the baseline's wall time)"

# fault_run NAME WANT_RC MAX_S FAULT [EXTRA ARGS...]: one injected fault.
fault_run() {
  local name=$1 want=$2 max_s=$3 fault=$4
  shift 4
  start_dcp "$name" "${SMOKE[@]}" --inject-fault "$fault" "$@"
  finish_dcp 60
  expect_rc "$name" "$want" "$name ($fault)"
  expect_within "$name" "$max_s"
}

# 1. Hang: rank 1 never dispatches; rank 0's bounded spin and the host
# deadline expire; the verdict says who waits on whom.
fault_run hang 1 "$(awk -v s="$STARTUP" 'BEGIN { print 3 + 5 + s }')" hang:1:0:0 --timeout 3 \
  --json "$WORK/hang.json"
expect_output hang "hang: the verdict says who waits on whom" \
  'rank 0 waits for rank 1 \(slot [0-9]+, parity [01], epoch [0-9]+' 'rank 1 last signalled epoch'
grep -m3 -E 'waits for rank|last signalled' "$WORK/hang.out" "$WORK/hang.err" | sed 's/^/    /'
expect_clean hang
# Rank 0's spin bound ends in a real device trap, which surfaces at a later
# CUDA call of ours (a copy or the sync): it must still be the kernel's trap,
# with its wait diagnosis, not a harness error naming one of our files.
if python3 - "$WORK/hang.json" <<'PY'; then
import json, sys
r0 = [r for r in json.load(open(sys.argv[1]))["cases"][0]["ranks"] if r["rank"] == 0][0]
# The spin bound's trap is the kernel's way to end a hang: kind hang (a trap
# without a wait would be kind trap), owned by the kernel.
assert r0["failure"] in ("hang", "trap") and r0["error_kind"] == "kernel", (r0["failure"], r0["error_kind"])
e = r0["error"]
assert "waiting for rank 1" in e and "trapped" in e and ".cpp" not in e, e
print("    rank 0:", r0["error"][:200])
PY
  pass "hang: rank 0's trap is reported as the kernel's, with its wait"
else
  fail "hang: rank 0's trap is not reported as the kernel's"
fi

# 2. Crash: rank 0 raises SIGSEGV before its first dispatch.
fault_run crash 3 "$(awk -v s="$STARTUP" 'BEGIN { print 5 + s }')" crash:0:0:0 --timeout 10
expect_output crash "crash: the verdict names rank 0, the signal and the case" \
  'rank 0 \(pid [0-9]+\) killed by signal 11 \(SIGSEGV\)' 'dcp2-'
grep -m2 -E 'killed by signal' "$WORK/crash.out" "$WORK/crash.err" | sed 's/^/    /'
expect_clean crash

# 3. Real CUDA errors in a worker: a failing CUDA call and an allocation no
# GPU can satisfy. Kernel-side faults: exit 1, naming the rank.
fault_run cuda_error 1 "$(awk -v s="$STARTUP" 'BEGIN { print 5 + s }')" cuda-error:1:0:0 --timeout 10
expect_output cuda_error "cuda-error: the verdict names rank 1 and the CUDA error" \
  'rank 1: injected cuda_error: CUDA error cuda[A-Za-z]+'
expect_clean cuda_error
fault_run oom 1 "$(awk -v s="$STARTUP" 'BEGIN { print 5 + s }')" oom:0:1:0 --timeout 10
expect_output oom "oom: the verdict names rank 0 and the allocation failure" \
  'rank 0: injected oom: CUDA error cudaErrorMemoryAllocation'
expect_clean oom

# 4. Corrupted output on rank 1 in case 1: the checker catches it.
fault_run corrupt 1 "$(awk -v s="$STARTUP" 'BEGIN { print 10 + s }')" corrupt:1:1:0 --timeout 10
expect_output corrupt "corrupt: FAIL verdict, a mismatch on rank 1 and a replay line" \
  '^FAIL' 'rank 1 op [0-9]+ token [0-9]+ head [0-9]+ dim [0-9]+: got' 'dcp-check replay w2-'
expect_clean corrupt

# 5. Ctrl-C / SIGTERM to the supervisor while a case hangs (rank 1 in case 1,
# with a deadline far away): torn down at once, partial reports written.
for sig in INT TERM; do
  [[ $sig == INT ]] && want=130 || want=143
  name=sig${sig,,}
  start_dcp "$name" "${SMOKE[@]}" --timeout 60 --inject-fault hang:1:1:0 \
    --json "$WORK/$name.json" --junit "$WORK/$name.xml"
  sleep "$(awk -v s="$STARTUP" 'BEGIN { print s + 2 }')"
  if ! kill -0 "$PID" 2>/dev/null; then
    fail "SIG$sig: the run ended before the signal (it should hang in case 1)"
    finish_dcp 5
    show_tail "$name"
    continue
  fi
  T0=$(gpu_now)
  kill -s "$sig" "$PID"
  finish_dcp 30
  expect_rc "$name" "$want" "SIG$sig during a hung case"
  expect_within "SIG$sig" 5
  expect_output "$name" "SIG$sig: the verdict names the signal" "SIG$sig"
  if [[ -s $WORK/$name.json && -s $WORK/$name.xml ]]; then
    py_checks "$name" "$WORK/$name.json" "$WORK/$name.xml" "$sig" <<'PY'
report, root, sig = json.load(open(sys.argv[1])), ET.parse(sys.argv[2]).getroot(), sys.argv[3]
want = {"INT": 2, "TERM": 15}[sig]
check(report["interrupted_by_signal"] == want and report["verdict"] == "INTERRUPTED",
      f"SIG{sig}: partial JSON says interrupted by {report['interrupted_by_signal']}, "
      f"verdict {report['verdict']!r}")
st = [c["status"] for c in report["cases"]]
check(st[:1] == ["pass"] and "skipped" in st[1:],
      f"SIG{sig}: partial JSON keeps case 0 passed and marks the rest skipped ({st})")
check(root.tag == "testsuites" and int(root.get("tests")) == len(st),
      f"SIG{sig}: partial JUnit is well-formed with {root.get('tests')} testcases")
PY
  else
    fail "SIG$sig: partial JSON/JUnit report missing"
  fi
  expect_clean "SIG$sig"
done

gpu_finish
