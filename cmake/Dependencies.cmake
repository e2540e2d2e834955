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

find_package(Threads REQUIRED)

if(COZ_BUILD_TESTS)
  find_package(GTest QUIET)
  if(NOT GTest_FOUND)
    message(FATAL_ERROR "GoogleTest not found: apt-get install libgtest-dev googletest")
  endif()
endif()
