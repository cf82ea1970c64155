#!/usr/bin/env bash
# docs/ci.md cannot rot: its blocks marked `<!-- e2e -->` run here, in order,
# in one scratch directory laid out as the page assumes (dcp-check/build is
# this build tree; my-kernel/ holds tests/plugins/host_plugin.c as the kernel
# repository's host-memory plugin), and `<!-- e2e file: PATH -->` blocks are
# written to PATH first. That is the page's CPU-only path: install, the
# kernel repository's gate script with DCP_BACKEND=host, a sharded run and a
# sharded stress campaign merged. Every other shell block is syntax-checked,
# and every CI recipe (YAML) must call the gate script that ran here.
# Usage: e2e_ci_docs.sh /path/to/dcp-check
set -u
# shellcheck source=expect_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/expect_lib.bash"
e2e_begin "$@"

# Split the page: e2e/NN.sh (run), file blocks (written), other/NN.<lang> (checked).
python3 - "$SRC/docs/ci.md" "$WORK" <<'PY' || { echo "FAIL: cannot split docs/ci.md"; exit 1; }
import os, re, sys
page, work = sys.argv[1], sys.argv[2]
lines = open(page).read().split("\n")
os.makedirs(f"{work}/e2e"); os.makedirs(f"{work}/other"); os.makedirs(f"{work}/files")
marker, n, i = None, 0, 0
while i < len(lines):
    m = re.match(r"^<!-- e2e(?: file: (\S+))? -->$", lines[i])
    if m:
        marker = ("file", m.group(1)) if m.group(1) else ("run", None)
        i += 1
        continue
    f = re.match(r"^```(\w+)$", lines[i])
    if f:
        j = lines.index("```", i + 1)
        body = "\n".join(lines[i + 1:j]) + "\n"
        n += 1
        if marker and marker[0] == "run":
            open(f"{work}/e2e/{n:02d}.sh", "w").write(body)
        elif marker:
            open(f"{work}/files/{n:02d}", "w").write(marker[1] + "\n" + body)
        else:
            open(f"{work}/other/{n:02d}.{f.group(1)}", "w").write(body)
        marker, i = None, j + 1
        continue
    if lines[i].strip():
        marker = None  # a marker applies to the very next block only
    i += 1
PY
runs=$(ls "$WORK/e2e" | wc -l)
[[ $runs -ge 4 ]] && ok "docs/ci.md has $runs e2e blocks" || fail "docs/ci.md has $runs e2e blocks (want >= 4)"

# The layout the page assumes.
DIR=$WORK/ci
mkdir -p "$DIR/dcp-check" "$DIR/my-kernel/host" "$DIR/my-kernel/src"
ln -s "$BUILD" "$DIR/dcp-check/build"
cp "$SRC/tests/plugins/host_plugin.c" "$DIR/my-kernel/host/my_dcp_kernel_host.c"
cp "$SRC/kernels/example_plugin/example_plugin.cu" "$DIR/my-kernel/src/my_dcp_kernel.cu"
for f in "$WORK"/files/*; do
  path=$(head -n 1 "$f")
  mkdir -p "$(dirname "$DIR/$path")"
  tail -n +2 "$f" >"$DIR/$path"
  bash -n "$DIR/$path" 2>/dev/null || [[ $path != *.sh && $path != *.sbatch ]] ||
    fail "docs/ci.md: $path is not valid bash"
done

# The e2e blocks, in page order, each in a fresh bash in the same directory.
for step in "$WORK"/e2e/*.sh; do
  start=$SECONDS
  (cd "$DIR" && timeout 240 bash -eo pipefail "$step") >"$step.log" 2>&1
  rc=$?
  if [[ $rc -eq 0 ]]; then
    ok "block $(basename "$step" .sh) exits 0 in $((SECONDS - start)) s: $(head -n 1 "$step")"
  else
    fail "block $(basename "$step" .sh) exits $rc: $(head -n 1 "$step")"
    sed 's/^/    /' "$step.log" | tail -n 25
  fi
done

# What the blocks left behind says they did what the page claims.
python3 - "$DIR" <<'PY' && ok "the gate passed on the host backend, the shards merged to the whole suite, the campaign to every scenario" ||
import json, sys
d = sys.argv[1]
gate = json.load(open(f"{d}/my-kernel/dcp-check.json"))
assert gate["verdict"] == "PASS" and gate["configuration"]["backend"] == "host", gate["verdict"]
assert gate["configuration"]["kernel"]["path"].endswith("libmy_dcp_kernel_host.so"), gate["configuration"]["kernel"]
merged = json.load(open(f"{d}/merged.json"))
assert merged["merged"]["num_shards"] == 3 and merged["verdict"] == "PASS", merged["verdict"]
assert merged["counts"]["total"] == sum(len(json.load(open(f"{d}/shard-{k}.json"))["cases"]) for k in range(3))
stress = json.load(open(f"{d}/stress.json"))
assert stress["stress"]["num_scenarios"] == 12 and stress["exit_code"] == 0, stress["stress"]
seeds = stress["stress"]["shard_seeds"]
assert len(set(seeds)) == 3, seeds
PY
  fail "the e2e blocks' reports do not say what docs/ci.md claims"
grep -q '<testsuites' "$DIR/merged.xml" 2>/dev/null || fail "merge wrote no JUnit"

# Shell blocks shown but not run (GPU, Slurm submission): valid bash at least.
for block in "$WORK"/other/*.sh "$WORK"/other/*.bash; do
  [[ -e $block ]] || continue
  bash -n "$block" 2>"$block.err" || fail "docs/ci.md: a shell block is not valid bash: $(cat "$block.err")"
done
# Every CI recipe calls the gate script that ran above.
yamls=0
for block in "$WORK"/other/*.yaml "$WORK"/other/*.yml; do
  [[ -e $block ]] || continue
  yamls=$((yamls + 1))
  grep -q 'bash ci/dcp-check.sh' "$block" || fail "a CI recipe in docs/ci.md does not call ci/dcp-check.sh"
  if python3 -c 'import yaml' 2>/dev/null; then
    python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' "$block" ||
      fail "a CI recipe in docs/ci.md is not valid YAML"
  fi
done
[[ $yamls -ge 3 ]] && ok "$yamls CI recipes call the gate script" || fail "only $yamls CI recipes (GitHub, GitLab, Buildkite)"

[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; exit 1; }
echo "all docs/ci.md checks passed"
