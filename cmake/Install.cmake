# What `cmake --install` lays out besides the binaries (libcoz/, tools/ and
# viewer/ install those):
#   include/coz.h                                the progress point macros
#   lib/cmake/coz-profiler/                      find_package(coz-profiler): coz::coz, coz::profiler
#   lib/pkgconfig/coz-profiler.pc                the same for pkg-config
#   share/man/man1/coz.1, share/bash-completion/completions/coz, share/doc/coz/LICENSE
# Every path inside the tree is relative to it (the .pc file and the CMake
# package find their prefix from where they lie, `coz` finds libcoz.so and the
# viewer page from /proc/self/exe), so an installed tree can be moved.
include(CMakePackageConfigHelpers)

install(FILES include/coz.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The Go package (docs/go.md): a Go program uses it through a replace directive.
install(DIRECTORY include/go/coz DESTINATION ${CMAKE_INSTALL_DATADIR}/coz/go)

# coz::coz, the target Coz's package gives its users: what a program needs to
# build with coz.h. The header's macros find the runtime with dlsym, which
# is in libc only from glibc 2.34, so libdl is linked too; kept under
# --as-needed, since the header declares dlsym weak and a weak reference
# alone would let the linker drop it (Coz links it the same way). Not
# libcoz.so: `coz run` preloads it, a program never links it.
add_library(coz_instrumentation INTERFACE)
add_library(coz::coz ALIAS coz_instrumentation)
set_target_properties(coz_instrumentation PROPERTIES EXPORT_NAME coz)
target_include_directories(coz_instrumentation INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(coz_instrumentation INTERFACE
  -Wl,--push-state,--no-as-needed ${CMAKE_DL_LIBS} -Wl,--pop-state)
install(TARGETS coz_instrumentation EXPORT coz-profilerTargets)

# The package: coz::coz, and coz::profiler, the installed `coz` (tools/
# adds it to the export), for a build that runs its programs under it.
set(COZ_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/coz-profiler)
install(EXPORT coz-profilerTargets NAMESPACE coz:: DESTINATION ${COZ_CMAKE_PACKAGE_DIR})
configure_package_config_file(cmake/coz-profilerConfig.cmake.in
  ${PROJECT_BINARY_DIR}/coz-profilerConfig.cmake
  INSTALL_DESTINATION ${COZ_CMAKE_PACKAGE_DIR})
# coz.h keeps Coz's ABI, so any 0.x request at or below ours is accepted.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/coz-profilerConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/coz-profilerConfig.cmake ${PROJECT_BINARY_DIR}/coz-profilerConfigVersion.cmake
  DESTINATION ${COZ_CMAKE_PACKAGE_DIR})

# pkg-config: the prefix relative to the .pc file's own directory.
file(RELATIVE_PATH COZ_PC_PREFIX_FROM_PCFILEDIR
  ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" COZ_PC_PREFIX_FROM_PCFILEDIR "${COZ_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(cmake/coz-profiler.pc.in ${PROJECT_BINARY_DIR}/coz-profiler.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/coz-profiler.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(FILES docs/coz.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES tools/completion/coz.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME coz)
if(EXISTS ${PROJECT_SOURCE_DIR}/LICENSE)
  install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/coz)
endif()
