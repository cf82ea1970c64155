#!/usr/bin/env bash
# dcp-check as an installed package (issue 32):
# - `cmake --install` to a scratch prefix lays out bin/, the plugin header,
#   the CMake package (config, version, targets), pkg-config, docs, example;
# - a host-memory plugin built from outside the tree with find_package(dcp_check)
#   against that prefix only, run by the installed binary on the host backend;
# - dcp_check_add_plugin's checks fail a plugin that exports a second symbol
#   or leaves a symbol undefined; a version the package does not satisfy is refused;
# - pkg-config finds the header;
# - CPack's .tar.gz and .deb hold the same tree (listed and checked), the .deb
#   names its dependencies, and the unpacked tarball runs.
# Usage: e2e_install.sh /path/to/dcp-check
set -u
# shellcheck source=expect_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/expect_lib.bash"
e2e_begin "$@"
P=$WORK/prefix

EXPECTED=(
  bin/dcp-check
  include/dcp_check/dcp_kernel_plugin.h
  lib/cmake/dcp_check/dcp_checkConfig.cmake
  lib/cmake/dcp_check/dcp_checkConfigVersion.cmake
  lib/cmake/dcp_check/dcp_checkTargets.cmake
  lib/cmake/dcp_check/dcp_check_verify_plugin.cmake
  share/pkgconfig/dcp_check.pc
  share/doc/dcp-check/README.md
  share/doc/dcp-check/plugins.md
  share/doc/dcp-check/ci.md
  share/dcp_check/example_plugin/CMakeLists.txt
  share/dcp_check/example_plugin/example_plugin.cu
)

# 1. cmake --install.
if cmake --install "$BUILD" --prefix "$P" >"$WORK/install.log" 2>&1; then
  ok "cmake --install to $P"
else
  fail "cmake --install failed"
  tail -n 20 "$WORK/install.log"
  exit 1
fi
for f in "${EXPECTED[@]}"; do [[ -e $P/$f ]] || fail "not installed: $f"; done
cmp -s "$P/include/dcp_check/dcp_kernel_plugin.h" "$SRC/kernels/dcp_kernel_plugin.h" ||
  fail "the installed header is not kernels/dcp_kernel_plugin.h"
"$P/bin/dcp-check" --version >"$WORK/version" 2>&1 || fail "installed dcp-check --version exits $?"
abi=$(sed -n 's/^#define DCP_PLUGIN_ABI_VERSION \([0-9]*\)/\1/p' "$SRC/kernels/dcp_kernel_plugin.h")
for pattern in '^dcp-check [0-9]+\.[0-9]+\.[0-9]+$' '^git revision ' "^plugin ABI $abi " \
  '^CUDA runtime ' '^CUDA driver' '^NCCL'; do
  grep -Eq "$pattern" "$WORK/version" || fail "--version lacks a line matching '$pattern'"
done
[[ $(wc -l <"$WORK/version") -eq 6 ]] && ok "--version: $(tr '\n' '|' <"$WORK/version")" ||
  fail "--version is not six lines: $(cat "$WORK/version")"

# 2. An out-of-tree host plugin, against the prefix only (no path into this tree).
mkdir -p "$WORK/plugin"
cp "$SRC/tests/plugins/host_plugin.c" "$WORK/plugin/"
cat >"$WORK/plugin/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(my_host_plugin LANGUAGES C)
find_package(dcp_check 0.1 REQUIRED)
dcp_check_add_plugin(NAME my_host_plugin SOURCES host_plugin.c LINK_LIBRARIES m)
# The imported targets are there for consumers that want them.
if(NOT TARGET dcp_check::dcp-check OR NOT TARGET dcp_check::plugin_abi)
  message(FATAL_ERROR "dcp_check's targets are missing")
endif()
get_target_property(tool dcp_check::dcp-check LOCATION)
file(WRITE ${CMAKE_BINARY_DIR}/tool.txt "${tool}")
EOF
plugin_build() {  # plugin_build DIR [cmake args]: configure + build against $P only
  local dir=$1
  shift
  cmake -S "$dir" -B "$dir/build" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    "$@" >"$dir/cfg.log" 2>&1 && cmake --build "$dir/build" >"$dir/build.log" 2>&1
}
if plugin_build "$WORK/plugin"; then
  ok "an out-of-tree host plugin builds with find_package(dcp_check) against the prefix"
else
  fail "the out-of-tree plugin does not build"
  tail -n 20 "$WORK/plugin/cfg.log" "$WORK/plugin/build.log"
fi
grep -qx "dcp_check_DIR:PATH=$P/lib/cmake/dcp_check" "$WORK/plugin/build/CMakeCache.txt" ||
  fail "find_package found dcp_check elsewhere: $(grep dcp_check_DIR "$WORK/plugin/build/CMakeCache.txt")"
[[ $(cat "$WORK/plugin/build/tool.txt" 2>/dev/null) == "$P/bin/dcp-check" ]] ||
  fail "dcp_check::dcp-check is not the installed binary: $(cat "$WORK/plugin/build/tool.txt" 2>/dev/null)"
grep -rq "$SRC" "$WORK/plugin/build/CMakeCache.txt" "$WORK/plugin/build/build.ninja" \
  "$WORK/plugin/build/Makefile" 2>/dev/null && fail "the plugin build refers to the source tree"
lib=$WORK/plugin/build/libmy_host_plugin.so
syms=$(nm -D --defined-only "$lib" 2>/dev/null | awk '{print $NF}' | grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' | tr '\n' ' ')
[[ $syms == "dcpKernelPlugin_v1 " ]] || fail "the plugin exports '$syms', want dcpKernelPlugin_v1 only"
(cd "$WORK" && timeout 120 "$P/bin/dcp-check" --world 2 --suite smoke --backend host --kernel "$lib" \
  --json "$WORK/plugin.json" --junit "$WORK/plugin.xml") >"$WORK/run.out" 2>&1
rc=$?
if [[ $rc -eq 0 ]] && grep -q '"path": ".*libmy_host_plugin.so"' "$WORK/plugin.json"; then
  ok "the installed dcp-check runs it on the host backend: $(tail -n 1 "$WORK/run.out")"
else
  fail "the installed dcp-check on the plugin: exit $rc"
  tail -n 15 "$WORK/run.out"
fi

# 3. dcp_check_add_plugin's checks can fail: a second export, an undefined symbol.
mkdir -p "$WORK/two" "$WORK/undef"
cp "$SRC/tests/plugins/host_plugin.c" "$WORK/two/"
cp "$SRC/tests/plugins/host_plugin.c" "$WORK/undef/"
echo '__attribute__((visibility("default"))) int my_second_export(void) { return 1; }' >"$WORK/two/extra.c"
echo 'int not_defined_anywhere(void); int use_it(void) { return not_defined_anywhere(); }' >"$WORK/undef/extra.c"
for d in two undef; do
  cat >"$WORK/$d/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(bad_plugin LANGUAGES C)
find_package(dcp_check REQUIRED)
dcp_check_add_plugin(NAME bad_plugin SOURCES host_plugin.c extra.c LINK_LIBRARIES m)
EOF
done
if plugin_build "$WORK/two"; then
  fail "a plugin exporting a second symbol builds"
else
  grep -q 'exports 2 symbols' "$WORK/two/build.log" && ok "a second exported symbol fails the build" ||
    fail "the second export fails without saying so: $(tail -n 5 "$WORK/two/build.log")"
fi
if plugin_build "$WORK/undef"; then
  fail "a plugin with an undefined symbol builds"
else
  grep -q 'not_defined_anywhere' "$WORK/undef/build.log" && ok "an undefined symbol fails the build" ||
    fail "the undefined symbol fails without naming it"
fi
mkdir -p "$WORK/newer"
echo 'cmake_minimum_required(VERSION 3.25)
project(x LANGUAGES NONE)
find_package(dcp_check 99 REQUIRED)' >"$WORK/newer/CMakeLists.txt"
cmake -S "$WORK/newer" -B "$WORK/newer/build" -DCMAKE_PREFIX_PATH="$P" >"$WORK/newer.log" 2>&1 &&
  fail "find_package(dcp_check 99) is satisfied by $(head -n 1 "$WORK/version")"

# 4. pkg-config (relocatable: ${pcfiledir}).
if command -v pkg-config >/dev/null 2>&1; then
  cflags=$(PKG_CONFIG_PATH=$P/share/pkgconfig pkg-config --cflags dcp_check)
  if echo '#include "dcp_kernel_plugin.h"
int main(void) { return DCP_PLUGIN_ABI_VERSION == 0; }' | cc $cflags -x c - -o "$WORK/pc" 2>"$WORK/pc.err"; then
    ok "pkg-config --cflags dcp_check: $cflags"
  else
    fail "pkg-config's flags do not find the header: $cflags $(cat "$WORK/pc.err")"
  fi
else
  echo "note: no pkg-config here: dcp_check.pc not checked"
fi

# 5. The packages: .tar.gz and .deb, contents listed and checked.
if cpack --config "$BUILD/CPackConfig.cmake" -G "TGZ;DEB" -B "$WORK/pkg" >"$WORK/cpack.log" 2>&1; then
  tgz=$(ls "$WORK"/pkg/*.tar.gz 2>/dev/null | head -n 1)
  deb=$(ls "$WORK"/pkg/*.deb 2>/dev/null | head -n 1)
  ok "cpack made $(basename "$tgz") and $(basename "$deb")"
  tar tzf "$tgz" | sed 's|^[^/]*/||' >"$WORK/tgz.list"
  dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./usr/||' >"$WORK/deb.list"
  for f in "${EXPECTED[@]}"; do
    grep -qx "$f" "$WORK/tgz.list" || fail ".tar.gz lacks $f"
    grep -qx "$f" "$WORK/deb.list" || fail ".deb lacks usr/$f"
  done
  echo "    .deb: $(dpkg-deb -f "$deb" Package Version Architecture Depends | tr '\n' ' ')"
  dpkg-deb -f "$deb" Depends | grep -q 'libfmt' || fail ".deb does not depend on fmt: $(dpkg-deb -f "$deb" Depends)"
  mkdir -p "$WORK/unpacked"
  tar xzf "$tgz" -C "$WORK/unpacked"
  "$WORK"/unpacked/*/bin/dcp-check --version >/dev/null 2>&1 && ok "the unpacked .tar.gz runs" ||
    fail "the unpacked .tar.gz's dcp-check does not run"
else
  fail "cpack failed"
  tail -n 20 "$WORK/cpack.log"
fi

[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; exit 1; }
echo "all install checks passed"
