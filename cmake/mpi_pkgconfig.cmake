# SPDX-License-Identifier: BSD-3-Clause
# flashattn-mpi.pc, included by cmake/install.cmake when the MPI component is built (after the
# FA_PC_* directories of flashattn.pc are set).
#
# A program that uses flashattn_mpi.h includes mpi.h and calls MPI itself, so MPI is a public
# dependency: `pkg-config --cflags --libs flashattn-mpi` must give MPI's include directories and
# library, so that plain cc links the program as mpicc does (with mpicc they repeat its own flags,
# which is harmless). The MPI that the library was built with is named by its own pkg-config
# module where it ships one whose headers are the ones CMake found (Open MPI: ompi-c; MPICH:
# mpich), in Requires; otherwise its flags as FindMPI reported them are written out in Cflags and
# Libs. flashattn itself is required at this exact version: the two libraries ship together.
set(FA_PC_MPI_REQUIRES "")
set(FA_PC_MPI_CFLAGS "")
set(FA_PC_MPI_LIBS "")
get_filename_component(_fa_mpi_hdr "${MPI_C_HEADER_DIR}" REALPATH)
foreach(_fa_mod ompi-c mpich)
  string(MAKE_C_IDENTIFIER "FA_PC_${_fa_mod}" _fa_prefix)
  pkg_check_modules(${_fa_prefix} QUIET ${_fa_mod})
  foreach(_fa_dir IN LISTS ${_fa_prefix}_INCLUDE_DIRS)
    get_filename_component(_fa_dir "${_fa_dir}" REALPATH)
    if(_fa_dir STREQUAL _fa_mpi_hdr AND NOT FA_PC_MPI_REQUIRES)
      set(FA_PC_MPI_REQUIRES ", ${_fa_mod}")
    endif()
  endforeach()
endforeach()
if(NOT FA_PC_MPI_REQUIRES)
  foreach(_fa_dir IN LISTS MPI_C_INCLUDE_DIRS)
    string(APPEND FA_PC_MPI_CFLAGS " -I${_fa_dir}")
  endforeach()
  foreach(_fa_def IN LISTS MPI_C_COMPILE_DEFINITIONS)
    string(APPEND FA_PC_MPI_CFLAGS " -D${_fa_def}")
  endforeach()
  foreach(_fa_opt IN LISTS MPI_C_COMPILE_OPTIONS)
    string(APPEND FA_PC_MPI_CFLAGS " ${_fa_opt}")
  endforeach()
  foreach(_fa_lib IN LISTS MPI_C_LINK_FLAGS MPI_C_LIBRARIES)
    string(APPEND FA_PC_MPI_LIBS " ${_fa_lib}")
  endforeach()
  message(STATUS "flashattn: flashattn-mpi.pc lists MPI's flags itself (no ompi-c or mpich pkg-config "
    "module with the headers in ${MPI_C_HEADER_DIR})")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/flashattn-mpi.pc.in ${CMAKE_CURRENT_BINARY_DIR}/flashattn-mpi.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/flashattn-mpi.pc DESTINATION ${FLASHATTN_INSTALL_PKGCONFIGDIR})
