#!/usr/bin/env bash
# The default suite end to end on the host backend (real supervisor, workers,
# shared-memory protocol, checker), at world 2 and 4, plus the README's main
# command on the host backend with both reports, which must validate:
#   JUnit: parsed by Python's XML parser, a structural check that every count
#   attribute matches the testcases; JSON: parsed, required fields present,
#   counts consistent. The optional validators (xmllint, junitparser) have
#   their own tests, e2e_junit_xmllint and e2e_junit_junitparser, which CTest
#   lists as skipped by name when the validator is missing.
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

run() {  # run NAME ARGS...: expects exit 0, prints the verdict line and wall time
  local name=$1
  shift
  local start=$SECONDS
  timeout 280 "$BIN" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" </dev/null
  local rc=$?
  local verdict
  verdict=$(grep -E '^(PASS|FAIL|HARNESS ERROR|INTERRUPTED)' "$WORK/$name.out" | tail -n 1)
  if [[ $rc -ne 0 ]]; then
    fail "dcp-check $* exited $rc after $((SECONDS - start)) s"
    tail -n 25 "$WORK/$name.out" | sed 's/^/    stdout: /'
    tail -n 5 "$WORK/$name.err" | sed 's/^/    stderr: /'
  else
    echo "ok   ($((SECONDS - start)) s) dcp-check $*: $verdict"
  fi
}

run w2 --backend host --world 2 --geometry tiny
run w4 --backend host --world 4 --geometry tiny

# The init-fault cases do what their ids say: a late init delays its case by
# its delay (2 s here), a failed one is agreed and the case still passes.
late=dcp2-tiny-bf16-lsefp32-base2-t5-contig-emptynone-ub1-eager2-initlate2000-s000001
for id in "$late" "${late/initlate2000/initfail}"; do
  name=${id#*eager2-}
  start_ns=$(date +%s%N)
  run "${name%-s*}" replay "w2-$id" --backend host
  ms=$((($(date +%s%N) - start_ns) / 1000000))
  if [[ $id == *initlate2000* ]] && ((ms < 2000)); then
    fail "the initlate2000 case took $ms ms: was the init delayed?"
  fi
  if [[ $id == *initfail* ]] && ((ms >= 2000)); then
    fail "the initfail case took $ms ms: did a rank wait for the failed one?"
  fi
done
cd "$WORK" || exit 1
run kimi --world 4 --geometry kimi --backend host --junit out.xml --json out.json

[[ -s out.xml && -s out.json ]] || { fail "reports missing"; echo "$failures failures"; exit 1; }

python3 - out.xml out.json <<'PY' || failures=$((failures + 1))
import json, sys
import xml.etree.ElementTree as ET

xml_path, json_path = sys.argv[1:3]
root = ET.parse(xml_path).getroot()
assert root.tag == "testsuites", root.tag
total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
for suite in root.findall("testsuite"):
    cases = suite.findall("testcase")
    got = {
        "tests": len(cases),
        "failures": sum(1 for c in cases if c.find("failure") is not None),
        "errors": sum(1 for c in cases if c.find("error") is not None),
        "skipped": sum(1 for c in cases if c.find("skipped") is not None),
    }
    for key, value in got.items():
        assert int(suite.get(key)) == value, (suite.get("name"), key, suite.get(key), value)
        total[key] += value
    for c in cases:
        assert c.get("classname", "").startswith("dcp-check."), c.get("classname")
        assert c.get("name"), "testcase without a name"
        float(c.get("time"))
for key, value in total.items():
    assert int(root.get(key)) == value, ("testsuites", key, root.get(key), value)
assert total["tests"] > 0, "no testcases"
print(f"ok   JUnit structure: {total}")

report = json.load(open(json_path))
for field in ["schema_version", "tool", "command", "argv", "command_line", "configuration",
              "environment", "started_at", "wall_s", "counts", "verdict", "exit_code", "cases"]:
    assert field in report, f"JSON report lacks '{field}'"
assert report["schema_version"] == 1
assert report["verdict"] == "PASS" and report["exit_code"] == 0, (report["verdict"], report["exit_code"])
assert report["configuration"]["backend"] == "host"
assert report["configuration"]["world"] == 4
assert report["configuration"]["geometry"]["name"] == "kimi"
assert report["environment"]["backend"] == "host", report["environment"]
counts = report["counts"]
assert counts["total"] == len(report["cases"]) == total["tests"], (counts, total)
# Every case passes but the SM-pressure ones, which the host skips by name.
press = [c for c in report["cases"] if "-press" in c["id"]]
assert press and all(c["status"] == "skipped" and "SM pressure needs the GPU backend" in
                     c["message"] for c in press), press[:1]
assert counts["passed"] == counts["total"] - len(press) and counts["skipped"] == len(press), counts
for case in report["cases"]:
    for field in ["id", "suite", "status", "elapsed_ms", "replay", "ranks"]:
        assert field in case, f"case lacks '{field}'"
    assert case["replay"].startswith("dcp-check replay w4-"), case["replay"]
    assert case in press or len(case["ranks"]) == 4, (case["id"], len(case["ranks"]))
print(f"ok   JSON report: {counts}")
PY

# The pressure and memstress suites need the GPU: on the host every case is
# skipped by name and the run is not a pass (exit 2, "every selected case was
# skipped"). gpu_only_suite SUITE ID-TOKEN REASON
gpu_only_suite() {
  local suite=$1 token=$2 reason=$3 rc
  timeout 60 "$BIN" --backend host --world 2 --geometry tiny --suite "$suite" \
    --json "$suite.json" >"$suite.out" 2>"$suite.err" </dev/null
  rc=$?
  if [[ $rc -ne 2 ]] || ! grep -q 'every selected case was skipped' "$suite.out" "$suite.err"; then
    fail "--suite $suite on the host: exit $rc, want 2 with 'every selected case was skipped'"
    tail -n 5 "$suite.out" "$suite.err"
  elif ! python3 - "$suite.json" "$token" "$reason" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
token, reason = sys.argv[2], sys.argv[3]
assert r["cases"] and all(c["status"] == "skipped" and token in c["id"] and
                          reason in c["message"] for c in r["cases"])
PY
    fail "--suite $suite on the host: cases not skipped by name"
  else
    echo "ok   --suite $suite on the host: every case skipped by name ($reason), exit 2"
  fi
}
gpu_only_suite pressure -press "SM pressure needs the GPU backend"
gpu_only_suite memstress -mstress "memory stress needs the GPU backend"

echo "$failures failures"
[[ $failures -eq 0 ]]
