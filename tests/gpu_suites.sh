#!/usr/bin/env bash
# The suites on the GPU backend, end to end (ranks share the GPU when there
# are fewer GPUs than ranks):
# - `--world 2 --suite smoke` passes;
# - `--world 2` (the default suite) passes with --json and --junit, and both
#   reports validate: JSON says backend gpu, every case of `dcp-check list`
#   ran and passed on every rank with elements checked; the JUnit XML is
#   well-formed, its count attributes match its testcases and the JSON;
# - `--world 4 --geometry kimi-k3 --suite upstream` passes (Kimi-K3's 6 heads
#   per rank in 128-head padded storage, one DCP4 and two DCP2 groups).
# Usage: gpu_suites.sh path/to/dcp-check
# shellcheck source=tests/gpu_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/gpu_lib.bash"
gpu_init gpu_suites "$@"

# 1. The smoke suite.
n=$(num_cases --world 2 --suite smoke)
run_dcp smoke 120 --world 2 --suite smoke
expect_rc smoke 0 "world 2 smoke suite ($n cases)" && expect_pass_verdict smoke "$n"

# 2. The default suite with both reports.
n=$(num_cases --world 2)
run_dcp default 240 --world 2 --json "$WORK/default.json" --junit "$WORK/default.xml"
expect_rc default 0 "world 2 default suite ($n cases)" && expect_pass_verdict default "$n"
if [[ -s $WORK/default.json && -s $WORK/default.xml ]]; then
  if command -v xmllint >/dev/null 2>&1; then
    if xmllint --noout "$WORK/default.xml" 2>"$WORK/xmllint.err"; then
      pass "xmllint: the JUnit report is well-formed"
    else
      fail "xmllint rejects the JUnit report: $(head -n 3 "$WORK/xmllint.err")"
    fi
  fi
  py_checks reports "$WORK/default.json" "$WORK/default.xml" "$n" <<'PY'
json_path, xml_path, want_total = sys.argv[1], sys.argv[2], int(sys.argv[3])
report = json.load(open(json_path))
env = report.get("environment") or {}
conf = report.get("configuration") or {}
counts = report.get("counts") or {}
cases = report.get("cases") or []
check(env.get("backend") == "gpu" and conf.get("backend") == "gpu",
      f"JSON: backend gpu (configuration {conf.get('backend')!r}, environment {env.get('backend')!r})")
check(len(env.get("gpus") or []) >= 1 and len(env.get("rank_gpu") or []) == 2,
      f"JSON: environment lists GPUs {[g.get('name') for g in env.get('gpus') or []]} "
      f"and rank->GPU {env.get('rank_gpu')}")
check(report.get("verdict") == "PASS" and report.get("exit_code") == 0,
      f"JSON: verdict {report.get('verdict')!r}, exit_code {report.get('exit_code')!r}")
check(counts.get("total") == len(cases) == want_total and counts.get("passed") == want_total,
      f"JSON: counts {counts}, {len(cases)} cases, want all {want_total} of `dcp-check list` passed")
not_passed = [c.get("id") for c in cases if c.get("status") != "pass"]
check(not not_passed, f"JSON: every case has status pass (not: {not_passed[:3]})")
# A capacity case (T = max_tokens + 1) checks nothing: every rank's kernel
# must have refused it, which its note says.
max_tokens = report.get("configuration", {}).get("geometry", {}).get("max_tokens")
def capacity(c):
    m = re.search(r"-t(\d+)-", c.get("id", ""))
    return m is not None and max_tokens is not None and int(m.group(1)) > max_tokens
thin = [c.get("id") for c in cases
        if len(c.get("ranks") or []) != 2 or not capacity(c) and
        any(r.get("num_checked", 0) <= 0 or not r.get("passed") for r in c["ranks"])]
check(not thin, f"JSON: every case has 2 passing ranks that checked elements (not: {thin[:3]})")
unrefused = [c.get("id") for c in cases if capacity(c) and
             any(not r.get("passed") or not r.get("note", "").startswith("refused: ") for r in c["ranks"])]
refusals = sum(1 for c in cases if capacity(c))
check(refusals >= 2 and not unrefused,
      f"JSON: {refusals} capacity cases, each refused on every rank (not: {unrefused[:3]})")
checked = sum(r.get("num_checked", 0) for c in cases for r in c.get("ranks") or [])
print(f"note: {checked} output elements checked in total")

root = ET.parse(xml_path).getroot()
check(root.tag == "testsuites", f"JUnit: root element {root.tag!r}")
total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
consistent = True
for suite in root.findall("testsuite"):
    tcs = suite.findall("testcase")
    got = {"tests": len(tcs),
           "failures": sum(c.find("failure") is not None for c in tcs),
           "errors": sum(c.find("error") is not None for c in tcs),
           "skipped": sum(c.find("skipped") is not None for c in tcs)}
    for key, value in got.items():
        if int(suite.get(key, -1)) != value:
            consistent = False
            print(f"  testsuite {suite.get('name')}: {key}={suite.get(key)} but {value} such testcases")
        total[key] += value
for key, value in total.items():
    if int(root.get(key, -1)) != value:
        consistent = False
        print(f"  testsuites: {key}={root.get(key)} but {value} such testcases")
check(consistent, f"JUnit: every count attribute matches its testcases {total}")
check(total == {"tests": want_total, "failures": 0, "errors": 0, "skipped": 0},
      f"JUnit: {total['tests']} testcases, none failed, errored or skipped (want {want_total})")
names = {c.get("name") for c in root.iter("testcase")}
check(names == {c.get("id") for c in cases}, "JUnit: the testcase names are the JSON case ids")
PY
else
  fail "world 2 default suite: --json/--junit reports missing"
fi

# 3. The upstream suite on Kimi-K3's padded geometry at world 4.
n=$(num_cases --world 4 --geometry kimi-k3 --suite upstream)
run_dcp upstream 240 --world 4 --geometry kimi-k3 --suite upstream
expect_rc upstream 0 "world 4 kimi-k3 upstream suite ($n cases)" && expect_pass_verdict upstream "$n"

gpu_finish
