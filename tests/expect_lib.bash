# Sourced by the e2e tests that check exit codes: needs BIN and WORK set;
# counts failures in $failures (the test exits non-zero when any).
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

expect() {  # expect CODE DESCRIPTION -- ARGS...: one dcp-check run, its exit code checked
  local want=$1 what=$2
  shift 3
  local start=$SECONDS
  timeout 120 "$BIN" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
  local rc=$?
  if [[ $rc -eq $want ]]; then
    echo "ok   exit $rc in $((SECONDS - start)) s: $what"
  else
    fail "exit $rc (want $want): $what: dcp-check $*"
    sed 's/^/    stdout: /' "$WORK/out" | tail -15
    sed 's/^/    stderr: /' "$WORK/err" | tail -5
  fi
}
