# `cmake --install build --prefix P` and the packages (issue 32):
#   P/bin/dcp-check
#   P/include/dcp_check/dcp_kernel_plugin.h       the plugin ABI, the one public header
#   P/lib/cmake/dcp_check/                        find_package(dcp_check): config, version,
#                                                 targets dcp_check::plugin_abi and
#                                                 dcp_check::dcp-check, dcp_check_add_plugin()
#   P/share/pkgconfig/dcp_check.pc               the header for pkg-config users
#   P/share/doc/dcp-check/                        README and docs/*.md
#   P/share/dcp_check/example_plugin/             the worked example, built with find_package
# CPack: a .tar.gz and a .deb of the same tree (cmake/packaging.cmake).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Not CMAKE_INSTALL_LIBDIR: on Debian it is multiarch (lib/x86_64-linux-gnu),
# and the issue promises P/lib/cmake/dcp_check, which find_package searches too.
set(DCP_CMAKE_PACKAGE_DIR "lib/cmake/dcp_check")

# The plugin ABI as a target: the header's folder (both spellings work:
# "dcp_kernel_plugin.h" and <dcp_check/dcp_kernel_plugin.h>).
add_library(dcp_plugin_abi INTERFACE)
add_library(dcp_check::plugin_abi ALIAS dcp_plugin_abi)
set_target_properties(dcp_plugin_abi PROPERTIES EXPORT_NAME plugin_abi)
target_include_directories(dcp_plugin_abi INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/kernels>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/dcp_check>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

install(TARGETS dcp-check dcp_plugin_abi EXPORT dcp_checkTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/kernels/dcp_kernel_plugin.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dcp_check)
install(EXPORT dcp_checkTargets NAMESPACE dcp_check:: DESTINATION ${DCP_CMAKE_PACKAGE_DIR})

# The plugin ABI version, read from the header: what the config reports.
file(STRINGS ${PROJECT_SOURCE_DIR}/kernels/dcp_kernel_plugin.h DCP_ABI_LINE
     REGEX "^#define DCP_PLUGIN_ABI_VERSION [0-9]+")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" DCP_PLUGIN_ABI_VERSION "${DCP_ABI_LINE}")

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dcp_checkConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/dcp_checkConfig.cmake
  INSTALL_DESTINATION ${DCP_CMAKE_PACKAGE_DIR})
# 0.x: a minor release may change the tool's flags; the ABI has its own version.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/dcp_checkConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${PROJECT_BINARY_DIR}/package/dcp_checkConfig.cmake
              ${PROJECT_BINARY_DIR}/package/dcp_checkConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/dcp_check_verify_plugin.cmake
        DESTINATION ${DCP_CMAKE_PACKAGE_DIR})

# pkg-config: relocatable (${pcfiledir}), so a tarball unpacked anywhere works.
configure_file(${PROJECT_SOURCE_DIR}/cmake/dcp_check.pc.in
               ${PROJECT_BINARY_DIR}/package/dcp_check.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/dcp_check.pc
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/pkgconfig)

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
        FILES_MATCHING PATTERN "*.md")
install(FILES ${PROJECT_SOURCE_DIR}/kernels/example_plugin/CMakeLists.txt
              ${PROJECT_SOURCE_DIR}/kernels/example_plugin/README.md
              ${PROJECT_SOURCE_DIR}/kernels/example_plugin/example_plugin.cu
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/dcp_check/example_plugin)

include(${PROJECT_SOURCE_DIR}/cmake/packaging.cmake)
