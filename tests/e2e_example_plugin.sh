#!/usr/bin/env bash
# The worked example plugin, as installed (<prefix>/share/dcp_check/example_plugin),
# builds from its own CMake project against the installed package alone
# (find_package(dcp_check), no path into this tree), and dcp-check's loader
# accepts its libraries and reads their declarations. Running them needs a
# GPU: ci/gpu.sh plugin and install do that.
set -u
# shellcheck source=expect_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/expect_lib.bash"
e2e_begin "$@"
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

# A copy of the installed example folder is what a kernel author starts from.
cmake --install "$BUILD" --prefix "$WORK/prefix" >"$WORK/install.log" 2>&1 ||
  { echo "FAIL: cmake --install"; tail -20 "$WORK/install.log"; exit 1; }
cp -r "$WORK/prefix/share/dcp_check/example_plugin" "$WORK/src"
if cmake -S "$WORK/src" -B "$WORK/build" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH="$WORK/prefix" >"$WORK/cfg.log" 2>&1 &&
  cmake --build "$WORK/build" -j"$(nproc)" >"$WORK/build.log" 2>&1; then
  echo "ok   the example plugin builds from its own project with find_package(dcp_check) against the installed package"
else
  fail "the example plugin does not build"
  tail -20 "$WORK/cfg.log" "$WORK/build.log"
  exit 1
fi
grep -q "$SRC" "$WORK/build/CMakeCache.txt" && fail "the example's build refers to the source tree"
for lib in libdcp_example_plugin.so libdcp_example_plugin_broken.so libdcp_example_plugin_foreign.so; do
  path="$WORK/build/$lib"
  exported=$(nm -D --defined-only "$path" | awk '$2 ~ /[BDRT]/ {print $3}' | grep -c '^dcpKernelPlugin' || true)
  [[ $exported -eq 1 ]] || fail "$lib exports $exported dcpKernelPlugin symbols (want exactly one)"
  if "$BIN" list --world 4 --geometry kimi --kernel "$path" >"$WORK/list" 2>"$WORK/err"; then
    head -3 "$WORK/list" | sed 's/^/    /'
    grep -q '^# capabilities: .*graph-safe' "$WORK/list" || fail "$lib: not declared graph-safe"
    # It does not declare pdl: exactly the PDL producer cases are skipped, by name.
    others=$(grep '# skipped' "$WORK/list" | grep -cv -- '-prodpdl-.*lacks capability pdl' || true)
    [[ $others -eq 0 ]] || fail "$lib would skip $others default cases besides the PDL ones: $(grep '# skipped' "$WORK/list" | grep -m1 -v 'capability pdl')"
    pdl=$(grep -c -- '-prodpdl-' "$WORK/list" || true)
    skipped=$(grep -c '# skipped' "$WORK/list" || true)
    [[ $pdl -gt 0 && $skipped -eq $pdl ]] || fail "$lib skips $skipped cases, want the $pdl PDL ones"
    echo "ok   dcp-check loads $lib and would run every default case but the $pdl PDL ones (skipped by name)"
  else
    fail "dcp-check refuses $lib: $(cat "$WORK/err")"
  fi
done
# No GPU here: a run says so in one line and exits 2 (never a pass).
if ! nvidia-smi -L >/dev/null 2>&1; then
  "$BIN" --world 2 --kernel "$WORK/build/libdcp_example_plugin.so" >"$WORK/out" 2>"$WORK/err"
  rc=$?
  [[ $rc -eq 2 ]] && grep -q 'no CUDA GPU' "$WORK/err" || fail "run without a GPU: exit $rc, $(cat "$WORK/err")"
  [[ $rc -eq 2 ]] && echo "ok   without a GPU a run of the plugin exits 2: $(cat "$WORK/err")"
fi
[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; exit 1; }
echo "all example-plugin checks passed"
