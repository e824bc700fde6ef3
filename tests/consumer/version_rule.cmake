# SPDX-License-Identifier: BSD-3-Clause
# The CMake package's version rule (cmake/install.cmake): find_package(flashattn X) takes a release
# R of ABI version A when A's first release <= X <= R. Checked on the installed version file, and on
# the template configured as two later releases: one of the same ABI version (it must still take a
# request for this one) and one of the next ABI version (it must not).
#   cmake -DVERSION_FILE=<prefix>/lib/cmake/flashattn/flashattnConfigVersion.cmake
#         -DTEMPLATE=cmake/flashattnConfigVersion.cmake.in -DWORK=<scratch dir> -P version_rule.cmake
foreach(_v VERSION_FILE TEMPLATE WORK)
  if(NOT ${_v})
    message(FATAL_ERROR "version_rule.cmake: -D${_v}=... is required")
  endif()
endforeach()

# What find_package sets before it loads a version file, for "X", "X...Y" or "X...<Y" ("" = none).
function(expect file request want)
  foreach(_v VERSION VERSION_MIN VERSION_MAX VERSION_RANGE VERSION_RANGE_MIN VERSION_RANGE_MAX)
    unset(PACKAGE_FIND_${_v})
  endforeach()
  if(request MATCHES "^(.*)\\.\\.\\.(<?)(.*)$")
    set(PACKAGE_FIND_VERSION_RANGE "${request}")
    set(PACKAGE_FIND_VERSION "${CMAKE_MATCH_1}")
    set(PACKAGE_FIND_VERSION_MIN "${CMAKE_MATCH_1}")
    set(PACKAGE_FIND_VERSION_MAX "${CMAKE_MATCH_3}")
    set(PACKAGE_FIND_VERSION_RANGE_MIN INCLUDE)
    if(CMAKE_MATCH_2)
      set(PACKAGE_FIND_VERSION_RANGE_MAX EXCLUDE)
    else()
      set(PACKAGE_FIND_VERSION_RANGE_MAX INCLUDE)
    endif()
  else()
    set(PACKAGE_FIND_VERSION "${request}")
  endif()
  include(${file})
  if(NOT "${PACKAGE_VERSION_COMPATIBLE}" STREQUAL "${want}")
    message(FATAL_ERROR "version rule: release ${PACKAGE_VERSION} asked for '${request}': "
      "compatible=${PACKAGE_VERSION_COMPATIBLE}, expected ${want} (${file})")
  endif()
  message(STATUS "release ${PACKAGE_VERSION}, request '${request}': ${want}")
endfunction()

include(${VERSION_FILE})
set(_this ${PACKAGE_VERSION})
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _mm "${_this}")
math(EXPR _next_minor "${CMAKE_MATCH_2} + 1")
math(EXPR _prev_minor "${CMAKE_MATCH_2} - 1")
set(_next "${CMAKE_MATCH_1}.${_next_minor}")
set(_prev "${CMAKE_MATCH_1}.${_prev_minor}")

# The installed release: itself, no earlier ABI's release, nothing later than itself.
expect(${VERSION_FILE} "" TRUE)
expect(${VERSION_FILE} "${_mm}" TRUE)
expect(${VERSION_FILE} "${_this}" TRUE)
expect(${VERSION_FILE} "${_prev}" FALSE)
expect(${VERSION_FILE} "${_next}" FALSE)
expect(${VERSION_FILE} "${_prev}...${_next}" TRUE)
expect(${VERSION_FILE} "${_prev}...<${_mm}" FALSE)

# A later release of the same ABI version takes a request for this one; one of the next ABI
# version (whose first release is 9.0.0) does not.
file(READ ${VERSION_FILE} _text)
string(REGEX MATCH "ABI version ([0-9]+)" _abi "${_text}")
set(FLASHATTN_SOVERSION ${CMAKE_MATCH_1})
string(REGEX MATCH "began with release ([0-9.]+[0-9])" _first "${_text}")
set(FLASHATTN_ABI_FIRST_RELEASE ${CMAKE_MATCH_1})
set(PROJECT_VERSION 9.9.9)
configure_file(${TEMPLATE} ${WORK}/later-same-abi.cmake @ONLY)
expect(${WORK}/later-same-abi.cmake "${_mm}" TRUE)
expect(${WORK}/later-same-abi.cmake "${FLASHATTN_ABI_FIRST_RELEASE}" TRUE)
expect(${WORK}/later-same-abi.cmake "${_prev}" FALSE)
math(EXPR FLASHATTN_SOVERSION "${FLASHATTN_SOVERSION} + 1")
set(FLASHATTN_ABI_FIRST_RELEASE 9.0.0)
configure_file(${TEMPLATE} ${WORK}/later-next-abi.cmake @ONLY)
expect(${WORK}/later-next-abi.cmake "${_mm}" FALSE)
expect(${WORK}/later-next-abi.cmake "9.0" TRUE)
