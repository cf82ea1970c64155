# CPack: `cpack --config build/CPackConfig.cmake -G "TGZ;DEB"` packs what
# cmake/install.cmake installs. The .deb names its runtime dependencies for
# Debian (shlibdeps) when dpkg-shlibdeps is there; the CUDA runtime is linked
# statically and NCCL and CUPTI are dlopen()ed, so none is a dependency.
set(CPACK_PACKAGE_NAME "dcp-check")
set(CPACK_PACKAGE_VENDOR "dcp-check")
set(CPACK_PACKAGE_CONTACT "dcp-check maintainers <dcp-check@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Tests decode-context-parallel all-to-all + LSE-combine GPU kernels against a float64 reference")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_FILE_NAME "dcp-check-${PROJECT_VERSION}-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_GENERATOR "TGZ;DEB")
set(CPACK_STRIP_FILES OFF)
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Dependencies named for the distribution: dpkg-shlibdeps (dpkg-dev) reads
# them off the binary's libraries; without it, Debian 12's names for fmt and
# spdlog (the only shared libraries beyond libc/libstdc++).
find_program(DCP_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(DCP_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libfmt9, libspdlog1.10")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "cmake, pkgconf, nvidia-cuda-toolkit")
include(CPack)
