#!/usr/bin/env bash
# Installs what dcp-check needs to build and test, from Debian packages, only
# if missing (probes first, so it is idempotent and works offline once done).
# Uses sudo only when not root. The CUDA toolkit is not installed here: it is
# expected at /usr/local/cuda (nvcc), as on NVIDIA's images and the GPU hosts.
set -euo pipefail

log() { echo "install_deps: $*"; }

has_header() {  # has_header fmt/format.h: found by the compiler (system, /usr/local, CPATH)
  command -v g++ >/dev/null 2>&1 &&
    echo "#include <$1>" | g++ -std=c++20 -x c++ -E - >/dev/null 2>&1
}
has_python_module() {
  local py
  for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 && "$py" -c "import $1" 2>/dev/null && return 0
  done
  return 1
}

# package:probe. A probe passes when the tool or header is already there, from
# a package or not (the GPU host has newer CMake/CLI11 outside apt).
REQUIRED=(
  "cmake:command -v cmake"
  "ninja-build:command -v ninja"
  "g++:command -v g++"
  "libcli11-dev:has_header CLI/CLI.hpp"
  "libfmt-dev:has_header fmt/format.h"
  "libspdlog-dev:has_header spdlog/spdlog.h"
  "doctest-dev:has_header doctest/doctest.h"
  "nlohmann-json3-dev:has_header nlohmann/json.hpp"
  "python3:command -v python3"
)
# Nice to have: e2e_junit_xmllint and e2e_junit_junitparser validate JUnit with
# them (CTest lists each as skipped, by name, when its validator is missing);
# Python's own XML parser checks JUnit always. dpkg-shlibdeps lets CPack name
# the .deb's dependencies from the binary (else a fixed Debian 12 list);
# e2e_install checks dcp_check.pc with pkg-config when it is there. NumPy:
# e2e_dump runs docs/dump_check.py on a dump (skipped by name without it).
OPTIONAL=(
  "libxml2-utils:command -v xmllint"
  "python3-junitparser:has_python_module junitparser"
  "python3-numpy:has_python_module numpy"
  "dpkg-dev:command -v dpkg-shlibdeps"
  "pkgconf:command -v pkg-config"
)

missing_from() {
  local entry
  for entry in "$@"; do
    eval "${entry#*:}" >/dev/null 2>&1 || echo "${entry%%:*}"
  done
}
mapfile -t missing < <(missing_from "${REQUIRED[@]}")
mapfile -t optional < <(missing_from "${OPTIONAL[@]}")

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
apt_install() {
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" \
    >/tmp/dcp-install-deps.log 2>&1
}
available() { apt-cache show "$1" >/dev/null 2>&1; }

if [[ ${#missing[@]} -gt 0 ]]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    log "missing ${missing[*]} and no apt-get here: install them with your package manager" >&2
    exit 1
  fi
  log "installing ${missing[*]} ${optional[*]}"
  $SUDO apt-get update -qq >/tmp/dcp-install-deps.log 2>&1 || {
    log "apt-get update failed (see /tmp/dcp-install-deps.log)" >&2
    exit 1
  }
  for pkg in "${optional[@]}"; do available "$pkg" && missing+=("$pkg"); done
  optional=()
  apt_install "${missing[@]}" || {
    log "apt-get install failed (see /tmp/dcp-install-deps.log)" >&2
    exit 1
  }
fi
# Optional packages ride along only when apt runs anyway: a machine that has
# every required tool may have no network (the GPU hosts), so apt stays untouched,
# unless DCP_INSTALL_OPTIONAL=1 (ci/test.sh, CI) asks for them; a failure there
# is a note, not an error (the tests needing them are skipped by name).
if [[ ${DCP_INSTALL_OPTIONAL:-0} == 1 && ${#optional[@]} -gt 0 ]] && command -v apt-get >/dev/null 2>&1; then
  log "installing optional ${optional[*]} (DCP_INSTALL_OPTIONAL=1)"
  if $SUDO apt-get update -qq >/tmp/dcp-install-deps.log 2>&1; then
    for pkg in "${optional[@]}"; do
      available "$pkg" && { apt_install "$pkg" || log "note: could not install $pkg"; }
    done
  else
    log "note: apt-get update failed; optional packages not installed"
  fi
fi
if ! has_python_module numpy; then
  log "note: NumPy (python3-numpy) not available; e2e_dump is skipped by name"
fi
if ! has_python_module junitparser; then
  log "note: python3-junitparser not available; JUnit is checked by xmllint/Python's XML parser"
fi

if command -v nvcc >/dev/null 2>&1; then
  :
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  log "nvcc is at /usr/local/cuda/bin but not on PATH: export PATH=/usr/local/cuda/bin:\$PATH"
else
  log "CUDA toolkit not found: dcp-check builds its kernels with nvcc and expects the toolkit" \
    "preinstalled at /usr/local/cuda (CUDA 13). Install it from NVIDIA, then rerun." >&2
  exit 1
fi
exit 0
