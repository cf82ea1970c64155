# Sourced by the e2e tests: expect() needs BIN and WORK set (e2e_begin sets
# both); fail() counts failures in $failures (the test exits non-zero when any).
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

# e2e_begin "$@": BIN (the test's one argument, path/to/dcp-check), SRC (the
# repository), BUILD (the build tree above BIN), WORK (scratch, removed on exit).
e2e_begin() {
  BIN=${1:?usage: the test takes path/to/dcp-check}
  SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  BUILD=$(cd "$(dirname "$BIN")/.." && pwd)
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
}

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
