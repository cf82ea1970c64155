#!/usr/bin/env bash
# The README's "run the tests" command, and what .ci/run executes: install the
# dependencies, build everything (the CUDA kernels too, so a kernel that does
# not compile fails CI), run every CTest test. GPU tests exit 77 without a GPU
# and CTest lists them as skipped, by name. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build-ci}
JOBS=$(nproc)
# CMake looks for nvcc on PATH; the toolkit lives in /usr/local/cuda.
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

step() { echo "== $* ($(date -u +%H:%M:%S))"; }

step "dependencies"
# CI also installs the optional packages (NumPy for e2e_dump, JUnit validators).
DCP_INSTALL_OPTIONAL=1 bash ci/install_deps.sh

start=$SECONDS
step "configure $BUILD_DIR"
mkdir -p "$BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja >"$BUILD_DIR/configure.log" 2>&1 || {
  cat "$BUILD_DIR/configure.log"
  exit 1
}
step "build -j$JOBS"
cmake --build "$BUILD_DIR" -j"$JOBS"
build_s=$((SECONDS - start))

start=$SECONDS
step "ctest"
ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 600
echo "== done: build ${build_s} s, tests $((SECONDS - start)) s"
