# Every dependency comes from a Debian 12 package; a missing one stops the
# configure step with the package to install.
find_package(PkgConfig QUIET)

function(coz_require_pkg var module package)
  if(NOT PkgConfig_FOUND)
    message(FATAL_ERROR "pkg-config is missing: apt-get install pkg-config")
  endif()
  pkg_check_modules(${var} QUIET IMPORTED_TARGET ${module})
  if(NOT ${var}_FOUND)
    message(FATAL_ERROR "${module} not found: apt-get install ${package}")
  endif()
endfunction()

coz_require_pkg(LIBELFIN libelf++ libelfin-dev)

find_package(fmt QUIET)
if(NOT fmt_FOUND)
  message(FATAL_ERROR "fmt not found: apt-get install libfmt-dev")
endif()

find_package(Boost QUIET COMPONENTS program_options)
if(NOT Boost_FOUND)
  message(FATAL_ERROR "Boost.Program_options not found: apt-get install libboost-program-options-dev")
endif()

find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  message(FATAL_ERROR "zlib not found: apt-get install zlib1g-dev")
endif()

# Debug sections compressed with zstd (objcopy --compress-debug-sections=zstd).
find_package(zstd CONFIG QUIET)
if(NOT TARGET zstd::libzstd_shared)
  message(FATAL_ERROR "zstd not found: apt-get install libzstd-dev")
endif()

find_package(Threads REQUIRED)

# Each of these follows its option: the tool alone (tests, bench and viewer
# off) needs only the packages above.
if(COZ_BUILD_TESTS)
  find_package(GTest QUIET)
  if(NOT GTest_FOUND)
    message(FATAL_ERROR "GoogleTest not found: apt-get install libgtest-dev googletest")
  endif()
endif()

# The viewer page is bundled by node/npm at build time. Without them the tool
# is still built, as one who only wants `coz run` and `coz report` expects:
# a warning, the viewer left out for this configure (not in the cache, so
# installing node and configuring again brings it back), and `coz plot`
# says how to get the page.
if(COZ_BUILD_VIEWER)
  find_program(COZ_NODE_EXECUTABLE NAMES node nodejs)
  find_program(COZ_NPM_EXECUTABLE npm)
  if(NOT COZ_NODE_EXECUTABLE OR NOT COZ_NPM_EXECUTABLE)
    message(WARNING "node/npm not found: building without the viewer page that `coz plot` needs. "
                    "apt-get install nodejs npm and configure again, or configure with "
                    "-DCOZ_BUILD_VIEWER=OFF to silence this warning.")
    set(COZ_BUILD_VIEWER OFF)
  endif()
endif()
