# `cpack` in a build tree makes two packages of what `cmake --install` lays out:
#   coz_<version>_<arch>.deb                     installs under /usr; takes the place
#       of Debian's coz-profiler (same `coz` command and coz.h), its library
#       dependencies found by dpkg-shlibdeps
#   coz-<version>-Linux.tar.gz                   to unpack anywhere: bin/coz finds
#       lib/coz/libcoz.so and share/coz/coz-viewer.html relative to itself
set(COZ_PACKAGE_MAINTAINER "coz maintainers <maintainers@users.noreply.a-seed-119f256b.example>"
  CACHE STRING "Maintainer field of the .deb that cpack builds")

set(CPACK_PACKAGE_NAME coz)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${COZ_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "causal profiler for native Linux programs, compatible with Coz")
set(CPACK_GENERATOR DEB TGZ)
set(CPACK_PACKAGE_FILE_NAME ${CPACK_PACKAGE_NAME}-${PROJECT_VERSION}-Linux)
# Not the build tree's RelWithDebInfo symbols: a package of a few MB, not tens.
set(CPACK_STRIP_FILES ON)
if(EXISTS ${PROJECT_SOURCE_DIR}/LICENSE)
  set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
endif()

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONFLICTS coz-profiler)
set(CPACK_DEBIAN_PACKAGE_REPLACES coz-profiler)
# The summary above is its first line; cpack indents the rest.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "A causal profiler tells which line, if made faster, would make the program
faster, and by how much: it runs performance experiments in the running
program, virtually speeding one line up by pausing the other threads while
that line runs, and measures how the rate of progress changes.

This is a new implementation of Coz (SOSP 2015) for C, C++ and Rust programs
on x86-64 Linux: the same coz.h progress points and profile format, and
find_package(coz-profiler) or pkg-config coz-profiler for builds.")
# Debian's place for the licence: /usr/share/doc/<package>/copyright, written
# into the .deb's tree only (cmake/DebianCopyright.cmake).
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/DebianCopyright.cmake)
set(CPACK_COZ_LICENSE_FILE ${PROJECT_SOURCE_DIR}/LICENSE)

if(NOT COZ_BUILD_VIEWER)
  message(STATUS "The packages cpack builds here will have no viewer page (COZ_BUILD_VIEWER is off)")
endif()

include(CPack)
