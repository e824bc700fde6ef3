# SPDX-License-Identifier: BSD-3-Clause
# FLASHATTN_ABI_GROWN=ON (test only; tests/abi/README.md): the library alone, compiled against a copy
# of include/flashattn.h generated here, in which fa_params, fa_context_opts, fa_seqs and fa_stats
# each end with one more 8-byte field, `uint64_t abi_grown`, whose default (in the FA_*_INIT
# initialisers) is 0: the layout a later version that adds a field to each would have. The copy
# also defines FLASHATTN_ABI_GROWN_STATS, the value the library then writes into
# fa_stats.abi_grown (src/api/params.c), as a later version fills a new output field. The public
# header itself carries none of this. Sets FA_PUBLIC_INCLUDE_DIR to the copy's folder.
set(_fa_src ${PROJECT_SOURCE_DIR}/include/flashattn.h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_fa_src})
file(READ ${_fa_src} _fa_h)

# Replaces the one occurrence of `anchor` in _fa_h; a header that lost it stops the configure.
function(_fa_grow anchor replacement)
  string(FIND "${_fa_h}" "${anchor}" _at)
  if(_at LESS 0)
    message(FATAL_ERROR "tests/abi/grown.cmake: '${anchor}' is not in include/flashattn.h")
  endif()
  string(REPLACE "${anchor}" "${replacement}" _grown "${_fa_h}")
  set(_fa_h "${_grown}" PARENT_SCOPE)
endfunction()

foreach(_fa_struct fa_params fa_context_opts fa_seqs fa_stats)
  _fa_grow("} ${_fa_struct};" "    uint64_t abi_grown; /* tests/abi: a field of a later version */\n} ${_fa_struct};")
endforeach()
# Each initialiser is "#define NAME {...}" (on one line, or continued with backslashes; no "}" inside
# the braces): its value for the new field is 0.
foreach(_fa_macro FA_PARAMS_INIT FA_CONTEXT_OPTS_INIT FA_SEQS_INIT FA_STATS_INIT)
  string(REGEX MATCH "#define ${_fa_macro} {[^}]*}" _fa_line "${_fa_h}")
  if(NOT _fa_line)
    message(FATAL_ERROR "tests/abi/grown.cmake: no #define ${_fa_macro} {...} in include/flashattn.h")
  endif()
  string(REGEX REPLACE "}$" ", 0}" _fa_grown_line "${_fa_line}")
  _fa_grow("${_fa_line}" "${_fa_grown_line}")
endforeach()
_fa_grow("#define FLASHATTN_ABI_VERSION "
  "#define FLASHATTN_ABI_GROWN_STATS UINT64_C(0x5AB1E0F5AB1E0F5A) /* tests/abi */\n#define FLASHATTN_ABI_VERSION ")

# Written only when it changes, so a reconfigure does not rebuild the library.
file(WRITE ${CMAKE_BINARY_DIR}/abi-grown/flashattn.h.new "${_fa_h}")
configure_file(${CMAKE_BINARY_DIR}/abi-grown/flashattn.h.new ${CMAKE_BINARY_DIR}/abi-grown/include/flashattn.h COPYONLY)
set(FA_PUBLIC_INCLUDE_DIR ${CMAKE_BINARY_DIR}/abi-grown/include)

# The library alone: the suite, fa-bench and the MPI component are compiled against include/.
foreach(_fa_off FLASHATTN_BUILD_TESTS FLASHATTN_BUILD_BENCH FLASHATTN_MPI FLASHATTN_FUZZ FLASHATTN_TEST_SHIM)
  set(${_fa_off} OFF)
endforeach()
message(STATUS "flashattn: FLASHATTN_ABI_GROWN: the library alone, against ${FA_PUBLIC_INCLUDE_DIR}/flashattn.h")
