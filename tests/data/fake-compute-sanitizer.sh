#!/usr/bin/env bash
# A stand-in for compute-sanitizer (tests/e2e_sanitize.sh): takes the options
# dcp-check passes (--tool X ... --log-file F), runs the worker after them, and
# writes a recorded report into F: $FAKE_REPORT_NOW at start (read after the
# first case), $FAKE_REPORT_AT_EXIT after the worker exited (then exits 86,
# the --error-exitcode, as the real one does when it reported errors).
# $FAKE_START_FAILS: the tool cannot start the worker (exits 1 at once).
log=""
while [[ ${1:-} == --* ]]; do
  [[ $1 == --log-file ]] && log=$2
  shift 2
done
[[ -n $log ]] || { echo "fake-compute-sanitizer: no --log-file" >&2; exit 99; }
echo "========= COMPUTE-SANITIZER" >>"$log"
if [[ -n ${FAKE_START_FAILS:-} ]]; then  # the tool cannot start its target
  echo "========= Error: Target application failed to start (fake)" >>"$log"
  exit 1
fi
[[ -n ${FAKE_REPORT_NOW:-} ]] && cat "$FAKE_REPORT_NOW" >>"$log"
"$@"
rc=$?
if [[ -n ${FAKE_REPORT_AT_EXIT:-} ]]; then
  cat "$FAKE_REPORT_AT_EXIT" >>"$log"
  exit 86
fi
echo "========= ERROR SUMMARY: 0 errors" >>"$log"
exit $rc
