#!/usr/bin/env bash
# Here (no GPU): pack this machine's build of dcp-check, gpu_check_bench,
# gpu_check_agree, gpu_sm_reach and gpu_inputs (the preparation against the host's bytes:
# run it as build-carry/tests/gpu_inputs), stripped, with the fmt and spdlog libraries they link, into
# build-carry/ (ignored by git, ~9 MiB), so a GPU call can skip its own build (~95 s of
# device time on a fresh machine): pass carry ["build-carry"] to the device
# tool and run there with
#   export BUILD_DIR=build-carry LD_LIBRARY_PATH=$PWD/build-carry/lib
#   bash ci/gpu.sh check checkself checkbench smreach perf perfdiag
# Only steps that need nothing but these binaries (not test, plugin,
# install, ...: those need the whole build tree). The build must be for
# sm_90: cmake -S . -B build -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90.
#   ci/carry.sh [BUILD]   (default: build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build}
grep -Eq '^CMAKE_CUDA_ARCHITECTURES:[A-Z]+=90$' "$build/CMakeCache.txt" ||
  { echo "ci/carry.sh: $build is not configured for sm_90" >&2; exit 2; }
cmake --build "$build" --target dcp-check gpu_check_bench gpu_check_agree gpu_inputs gpu_sm_reach
rm -rf build-carry
mkdir -p build-carry/src build-carry/tests build-carry/lib
strip -o build-carry/src/dcp-check "$build/src/dcp-check"
strip -o build-carry/tests/gpu_check_bench "$build/tests/gpu_check_bench"
strip -o build-carry/tests/gpu_check_agree "$build/tests/gpu_check_agree"
strip -o build-carry/tests/gpu_inputs "$build/tests/gpu_inputs"
strip -o build-carry/tests/gpu_sm_reach "$build/tests/gpu_sm_reach"
ldd "$build/src/dcp-check" | awk '/libfmt|libspdlog/ {print $3}' | xargs -r cp -L -t build-carry/lib
du -sh build-carry
