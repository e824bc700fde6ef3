# SPDX-License-Identifier: BSD-3-Clause
# The optional MPI component: libflashattn_mpi (include/flashattn_mpi.h, src/mpi/*.c), sequence-parallel
# ring attention on the core's public API. FLASHATTN_MPI=AUTO builds it when find_package(MPI) finds
# an MPI with C bindings, ON requires one, OFF leaves it out; the core never depends on MPI.
#
# Sets FA_MPI (ON when the component is built). Targets, each the counterpart of a core one:
#   flashattn_mpi         shared, soname libflashattn_mpi.so.<FLASHATTN_SOVERSION>, links flashattn + MPI
#   flashattn_mpi_static  libflashattn_mpi.a with only the FA_API calls global (as flashattn_static)
# Installed, exported (flashattn::mpi, flashattn::mpi_static) and described by flashattn-mpi.pc in
# cmake/install.cmake.
set(FA_MPI OFF)
if(FLASHATTN_MPI STREQUAL "OFF")
  return()
endif()
if(NOT FLASHATTN_MPI MATCHES "^(AUTO|ON)$")
  message(FATAL_ERROR "FLASHATTN_MPI must be AUTO, ON or OFF, not '${FLASHATTN_MPI}'")
endif()

find_package(MPI COMPONENTS C)
file(GLOB FA_MPI_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/mpi/*.c)
set(_fa_mpi_missing "")
if(NOT MPI_C_FOUND)
  string(CONCAT _fa_mpi_missing "no MPI with C bindings found (Debian: apt-get install libopenmpi-dev "
    "openmpi-bin, or scripts/deps.sh test as root; another MPI: point MPI_C_COMPILER at its mpicc)")
elseif(NOT FA_MPI_SOURCES)
  # Only while the component is being written: the header came before src/mpi/.
  set(_fa_mpi_missing "no sources in src/mpi/")
endif()
if(NOT _fa_mpi_missing STREQUAL "")
  if(FLASHATTN_MPI STREQUAL "ON")
    message(FATAL_ERROR "flashattn: FLASHATTN_MPI=ON, but ${_fa_mpi_missing}. "
      "Configure with -DFLASHATTN_MPI=AUTO or OFF to build the library without its MPI component.")
  endif()
  message(STATUS "flashattn: the MPI component (libflashattn_mpi) is not built: ${_fa_mpi_missing}")
  return()
endif()
set(FA_MPI ON)
message(STATUS "flashattn: building the MPI component (libflashattn_mpi) on MPI ${MPI_C_VERSION} (${MPI_C_COMPILER})")

# The same compile as the core's objects: C11, the warnings (and -Werror), hidden visibility so that
# only the FA_API calls of flashattn_mpi.h are exported, position-independent for the shared library.
add_library(flashattn_mpi_objects OBJECT ${FA_MPI_SOURCES})
set_target_properties(flashattn_mpi_objects PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
target_include_directories(flashattn_mpi_objects PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src/mpi)
target_compile_definitions(flashattn_mpi_objects PRIVATE _GNU_SOURCE)
target_compile_options(flashattn_mpi_objects PRIVATE ${FA_WARNINGS})
# The layer calls the core's public API only (DESIGN.md), so it compiles against the shared core's
# usage requirements: include/ and OpenMP. MPI's include directories arrive as system ones.
target_link_libraries(flashattn_mpi_objects PUBLIC flashattn MPI::MPI_C)

add_library(flashattn_mpi SHARED $<TARGET_OBJECTS:flashattn_mpi_objects>)
target_link_libraries(flashattn_mpi PUBLIC flashattn MPI::MPI_C)
# $ORIGIN: an installed libflashattn_mpi finds the libflashattn beside it, in any prefix, moved or not.
set_target_properties(flashattn_mpi PROPERTIES OUTPUT_NAME flashattn_mpi VERSION ${FLASHATTN_LIB_VERSION}
  SOVERSION ${FLASHATTN_SOVERSION} INSTALL_RPATH "$ORIGIN" EXPORT_NAME mpi)

# As for libflashattn.a: one relocatable object whose hidden symbols objcopy makes local, so the
# archive exports the FA_API calls only; its references to the core's fa_ calls stay undefined.
set(FA_MPI_PUBLIC_OBJECT ${CMAKE_CURRENT_BINARY_DIR}/flashattn_mpi_public.o)
add_custom_command(OUTPUT ${FA_MPI_PUBLIC_OBJECT}
  COMMAND ${CMAKE_LINKER} -r -o ${FA_MPI_PUBLIC_OBJECT} $<TARGET_OBJECTS:flashattn_mpi_objects>
  COMMAND ${CMAKE_OBJCOPY} --localize-hidden ${FA_MPI_PUBLIC_OBJECT}
  DEPENDS flashattn_mpi_objects $<TARGET_OBJECTS:flashattn_mpi_objects>
  COMMAND_EXPAND_LISTS VERBATIM
  COMMENT "Linking the static MPI library's objects into one with only the public API global")
add_library(flashattn_mpi_static STATIC ${FA_MPI_PUBLIC_OBJECT})
set_target_properties(flashattn_mpi_static PROPERTIES LINKER_LANGUAGE C OUTPUT_NAME flashattn_mpi
  EXPORT_NAME mpi_static)
target_link_libraries(flashattn_mpi_static PUBLIC flashattn_static MPI::MPI_C)

foreach(t flashattn_mpi flashattn_mpi_static)
  target_include_directories(${t} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()
add_library(flashattn::mpi ALIAS flashattn_mpi)
add_library(flashattn::mpi_static ALIAS flashattn_mpi_static)

# The MPI implementation the component was built with, for the installed package to check that a
# consumer finds the same one: Open MPI and MPICH are not ABI compatible (MPI_Comm is a pointer in
# one, an int in the other), so a mismatch would crash at run time instead of failing at configure.
set(FA_MPI_FLAVOUR "")
if(EXISTS "${MPI_C_HEADER_DIR}/mpi.h")
  file(STRINGS "${MPI_C_HEADER_DIR}/mpi.h" _fa_mpi_h REGEX "^#define (OPEN_MPI|MPICH_VERSION) ")
  if(_fa_mpi_h MATCHES "OPEN_MPI")
    set(FA_MPI_FLAVOUR OPEN_MPI)
  elseif(_fa_mpi_h MATCHES "MPICH_VERSION")
    set(FA_MPI_FLAVOUR MPICH_VERSION)
  endif()
endif()
