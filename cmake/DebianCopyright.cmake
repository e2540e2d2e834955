# Run by cpack (CPACK_PRE_BUILD_SCRIPTS, cmake/Packaging.cmake) in its staging
# tree before each package is made. For the .deb only: Debian's copyright
# file, in its machine-readable format, where Debian looks for it
# (/usr/share/doc/<package>/copyright), with the text of the source's LICENSE.
# The .tar.gz and `cmake --install` have share/doc/coz/LICENSE alone.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()

set(text "")
set(holder "the coz authors")
if(EXISTS "${CPACK_COZ_LICENSE_FILE}")
  file(READ "${CPACK_COZ_LICENSE_FILE}" licence)
  string(REGEX MATCH "Copyright[^\n]*" line "${licence}")
  if(line)
    string(REGEX REPLACE "^Copyright *(\\([cC]\\))? *" "" holder "${line}")
  endif()
  # Each line indented by one space; an empty line is " ." (deb822).
  string(REGEX REPLACE "\n+$" "" licence "${licence}")
  string(REPLACE "\n" "\n " text "\n${licence}")
  string(REGEX REPLACE "\n \n" "\n .\n" text "${text}")
  string(REGEX REPLACE "\n \n" "\n .\n" text "${text}")
else()
  set(text "\n The licence text is the LICENSE file of the source.")
endif()

set(dir "${CPACK_TEMPORARY_INSTALL_DIRECTORY}${CPACK_PACKAGING_INSTALL_PREFIX}/share/doc/${CPACK_PACKAGE_NAME}")
file(MAKE_DIRECTORY "${dir}")
file(WRITE "${dir}/copyright"
"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: ${CPACK_PACKAGE_NAME}

Files: *
Copyright: ${holder}
License: BSD-2-Clause${text}
")
