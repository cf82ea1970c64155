#!/usr/bin/env bash
# The kernel plugin seam end to end on the host backend (no GPU): the test
# plugins of tests/plugins (host memory, C11) loaded by the real binary.
# Every refusal is one line on stderr with the documented exit code:
#   2 the plugin cannot be used (missing file, not a shared library, no or an
#     unknown ABI symbol, wrong ABI version, absurd region request), or every
#     selected case was skipped;
#   1 the kernel failed (a check, its init on one rank, a crash inside it).
set -u
BIN=${1:?usage: $0 path/to/dcp-check}
PLUGINS=$(cd "$(dirname "$BIN")/../tests/plugins" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
HOST=(--backend host --world 4 --geometry tiny --timeout 5)
source "$(dirname "${BASH_SOURCE[0]}")/expect_lib.bash"

# One error line on stderr, matching the pattern, naming no source file.
one_line() {  # one_line ERE
  local lines
  lines=$(grep -c . "$WORK/err")
  [[ $lines -eq 1 ]] || fail "expected one stderr line, got $lines: $(head -3 "$WORK/err")"
  grep -Eq "$1" "$WORK/err" || fail "stderr does not match /$1/: $(cat "$WORK/err")"
  if grep -Eq '\.(cpp|h):[0-9]+' "$WORK/err"; then fail "stderr names a source file: $(cat "$WORK/err")"; fi
}

lib() { echo "$PLUGINS/libdcp_host_plugin$1.so"; }

# The correct plugin passes the default suite at world 4 (one DCP4 and two DCP2
# groups) and at world 2, and every report names it.
expect 0 "the host plugin passes the default suite" -- "${HOST[@]}" --kernel "$(lib "")" \
  --json "$WORK/run.json" --junit "$WORK/run.xml"
grep -q '^PASS' "$WORK/out" || fail "no PASS verdict"
grep -q "kernel dcp-host-plugin 1.0 ($(lib "")" "$WORK/out" || fail "terminal header does not name the plugin"
python3 - "$WORK/run.json" "$(lib "")" <<'PY' || fail "JSON report does not name the kernel"
import hashlib, json, sys
report = json.load(open(sys.argv[1]))
k = report["configuration"]["kernel"]
sha = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
assert k["name"] == "dcp-host-plugin" and k["version"] == "1.0", k
assert k["path"] == sys.argv[2] and k["sha256"] == sha, (k["path"], k["sha256"], sha)
# The host skips only the SM-pressure cases (it has no SMs), by name.
skipped = [c for c in report["cases"] if c["status"] == "skipped"]
assert all("SM pressure needs the GPU backend" in c["message"] for c in skipped), skipped[:1]
assert all("-press" in c["id"] for c in skipped) and report["counts"]["passed"] > 0, report["counts"]
PY
grep -q 'name="kernel_sha256"' "$WORK/run.xml" || fail "JUnit properties lack the kernel's sha256"
expect 0 "the host plugin passes at world 2" -- --backend host --world 2 --geometry tiny --kernel "$(lib "")"

# Bit-for-bit comparison of any two kernels: the plugin against the host model.
expect 0 "--against: the plugin agrees with the built-in host model" -- "${HOST[@]}" --suite smoke \
  --kernel "$(lib "")" --against direct

# Replay and stress run the same plugin (the replay line carries --kernel).
expect 1 "a broken plugin fails with replay lines" -- "${HOST[@]}" --kernel "$(lib _bad_shape)"
grep -Eq 'stride=.*padded-lse|pad[0-9]+x[1-9]' "$WORK/out" || fail "bad-shape failures do not point at padded LSE"
replay=$(grep -m1 -o 'dcp-check replay .*' "$WORK/out")
[[ $replay == *"--kernel $(lib _bad_shape)"* ]] || fail "replay line lacks --kernel: $replay"
read -ra args <<<"${replay#dcp-check }"
expect 1 "the replay line reproduces the failure" -- "${args[@]}"
# Guard zones: a write one element past the output is caught, though every
# element of the output is right, and named by buffer, side and offset. The
# write may have hit anything, so the session ends there (later cases skipped).
expect 1 "a write past the output fails the guard zone" -- "${HOST[@]}" --suite smoke \
  --kernel "$(lib _write_past_output)" --json "$WORK/oob.json"
python3 - "$WORK/oob.json" <<'PY' || fail "the out-of-bounds write is not reported as such"
import json, sys
report = json.load(open(sys.argv[1]))
bad = [c for c in report["cases"] if c["status"] not in ("pass", "skipped")]
assert bad and all(c["failure_type"] == "out-of-bounds" for c in bad), [(c["id"], c["failure_type"]) for c in bad]
ranks = [r for c in bad for r in c["ranks"] if r["failure"] == "out-of-bounds"]
assert ranks and all(r["num_mismatches"] == 0 for r in ranks), "the output itself must check clean"
msg = ranks[0]["error"]
assert "'output' was written past its end: 2 bytes changed, the first at +0 after the end" in msg, msg
PY
# Two contexts in one process (-ctx2): a plugin whose own receive buffers are
# per-process statics fails exactly the two-contexts cases. World 2 and the tiny
# cases only: one workspace per process, so every other case has one context
# and passes (the upstream cases' kimi-k3 workspace would be a second one).
expect 1 "a plugin with state shared by its contexts fails the ctx2 cases" -- --backend host \
  --world 2 --geometry tiny --timeout 5 --filter '^dcp2-tiny-' --kernel "$(lib _global_recv)" \
  --json "$WORK/ctx2.json"
python3 - "$WORK/ctx2.json" <<'PY' || fail "the shared-state plugin does not fail exactly the ctx2 cases"
import json, sys
report = json.load(open(sys.argv[1]))
cases = report["cases"]
ctx2 = [c for c in cases if "-ctx2-" in c["id"]]
assert ctx2, "no ctx2 case ran"
for c in cases:
    want = "fail" if c in ctx2 else "skipped" if "-press" in c["id"] else "pass"
    assert c["status"] == want, (c["id"], c["status"])
PY
expect 0 "stress runs the plugin" -- stress --backend host --world 2 --geometry tiny \
  --kernel "$(lib "")" --duration 3s --seed 7

# Loader refusals: exit 2, one line.
expect 2 "missing file" -- "${HOST[@]}" --kernel "$WORK/nope.so"
one_line 'no such file'
echo "not an ELF" >"$WORK/text.so"
expect 2 "not a shared library" -- "${HOST[@]}" --kernel "$WORK/text.so"
one_line 'not a shared library'
expect 2 "unknown built-in name" -- "${HOST[@]}" --kernel nosuch
one_line 'no built-in kernel'
expect 2 "no v1 symbol (exports v0)" -- "${HOST[@]}" --kernel "$(lib _no_symbol)"
one_line 'dcpKernelPlugin_v0.*older'
expect 2 "wrong ABI version in the table" -- "${HOST[@]}" --kernel "$(lib _wrong_abi)"
one_line 'ABI version 99'
expect 2 "a region request too large" -- "${HOST[@]}" --kernel "$(lib _huge_region)"
one_line "region 'out_recv' asks for 1125899906842624 bytes"
expect 2 "a device-memory kernel on the host backend" -- "${HOST[@]}" --kernel stock
one_line 'runs on the GPU'

# Capabilities: unsupported dtype is a skip with the reason, never a pass;
# every selected case skipped is not exit 0.
expect 0 "fp16-only plugin: the suite is generated for fp16" -- "${HOST[@]}" \
  --kernel "$(lib _fp16_only)" --json "$WORK/skip.json"
python3 - "$WORK/skip.json" <<'PY' || fail "the fp16-only suite holds bf16 cases or unnamed skips"
import json, sys
r = json.load(open(sys.argv[1]))
assert not [c["id"] for c in r["cases"] if "-bf16-" in c["id"] and "-press" not in c["id"]]
skipped = [c for c in r["cases"] if c["status"] == "skipped"]
assert skipped and all("-press" in c["id"] for c in skipped), [c["id"] for c in skipped][:3]
assert all("SM pressure needs the GPU backend" in c["message"] for c in skipped)
assert r["counts"]["passed"] > 0 and r["coverage"]["covered"] == r["coverage"]["allowed"]
PY
expect 2 "every selected case skipped" -- "${HOST[@]}" --kernel "$(lib _fp16_only)" --suite pressure
grep -q 'every selected case was skipped' "$WORK/err" || fail "no 'every case skipped' line"

# Init fails on one rank only: every rank stops with that rank's message, fast.
start=$SECONDS
expect 1 "init fails on group rank 1 only" -- "${HOST[@]}" --kernel "$(lib _init_fails)"
((SECONDS - start < 20)) || fail "init failure took $((SECONDS - start)) s (a rank waited alone?)"
grep -q 'injected init failure on group rank 1' "$WORK/err" || fail "the failing rank's message is not shown"

# Init arrives 3 s late on one rank: the others wait for it (no deadline
# fires, no rank calls alone), and every case passes.
start=$SECONDS
expect 0 "init 3 s late on group rank 1" -- "${HOST[@]}" --kernel "$(lib _init_late)" --suite smoke
((SECONDS - start >= 3)) || fail "the late init did not delay the run ($((SECONDS - start)) s): was it injected?"

# A crash inside the plugin's call: the kernel's failure, named as such.
expect 1 "a plugin that crashes in a call" -- "${HOST[@]}" --kernel "$(lib _crash)"
grep -q "killed by signal 11 (SIGSEGV) inside kernel 'dcp-host-plugin-crash'" "$WORK/out" ||
  fail "the crash is not attributed to the kernel"

leftover=$(ls /dev/shm 2>/dev/null | grep -c '^dcp-check-' || true)
[[ $leftover -eq 0 ]] || echo "note: $leftover dcp-check shared-memory names in /dev/shm (other runs?)"
if [[ $failures -gt 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all plugin checks passed"
