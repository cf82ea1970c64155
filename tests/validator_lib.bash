# Sourced by the e2e_junit_* tests of optional validators.
# missing MESSAGE: exit 77 (CTest: skipped, by name), or 1 with DCP_REQUIRE_VALIDATORS=1:
# a missing validator is reported, never silently skipped.
missing() {
  if [[ ${DCP_REQUIRE_VALIDATORS:-0} == 1 ]]; then
    echo "FAIL: $1 (DCP_REQUIRE_VALIDATORS=1)"
    exit 1
  fi
  echo "SKIP: $1"
  exit 77
}
