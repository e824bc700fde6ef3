# SPDX-License-Identifier: BSD-3-Clause
# Installation: header, shared + static library, pkg-config file and a CMake package; the same for
# the MPI component when it is built (cmake/mpi.cmake): flashattn_mpi.h, libflashattn_mpi.{so,a},
# flashattn-mpi.pc and the package's mpi component.
#
# Everything installed is relocatable: the CMake package locates itself through
# PACKAGE_PREFIX_DIR and flashattn.pc through ${pcfiledir}, so a prefix may be
# moved or chosen at install time (cmake --install build --prefix DIR).
include(CMakePackageConfigHelpers)

set(FLASHATTN_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/flashattn"
    CACHE STRING "Where flashattnConfig.cmake is installed, relative to the prefix")
set(FLASHATTN_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where flashattn.pc is installed, relative to the prefix")

install(FILES include/flashattn.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(TARGETS flashattn flashattn_static
  EXPORT flashattnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(EXPORT flashattnTargets
  NAMESPACE flashattn::
  FILE flashattnTargets.cmake
  DESTINATION ${FLASHATTN_INSTALL_CMAKEDIR})

# The MPI component, when built: its header, both libraries, and their targets in a file of their
# own that flashattnConfig.cmake loads only for COMPONENTS mpi (so plain find_package(flashattn)
# never needs MPI). Its targets refer to flashattn::flashattn(_static) of the export above.
if(FA_MPI)
  install(FILES include/flashattn_mpi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(TARGETS flashattn_mpi flashattn_mpi_static
    EXPORT flashattnMpiTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT flashattnMpiTargets
    NAMESPACE flashattn::
    FILE flashattnMpiTargets.cmake
    DESTINATION ${FLASHATTN_INSTALL_CMAKEDIR})
endif()

configure_package_config_file(cmake/flashattnConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/flashattnConfig.cmake
  INSTALL_DESTINATION ${FLASHATTN_INSTALL_CMAKEDIR})
# Which requests this package satisfies follows the ABI version (the soname), not the release
# number: find_package(flashattn 0.4) accepts 0.4.0 and every later release of the same ABI version
# (0.5, 1.2, ...), and no release of another ABI version. CMake's own rules (SameMajorVersion,
# SameMinorVersion) follow the release number, so cmake/flashattnConfigVersion.cmake.in states it:
# a request is satisfied when it lies between FLASHATTN_ABI_FIRST_RELEASE (the release that began
# this ABI version, CMakeLists.txt) and this release. A later ABI version's package has a later
# first release, so it refuses a request for 0.4, whose programs may use what it removed.
configure_file(cmake/flashattnConfigVersion.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/flashattnConfigVersion.cmake
  @ONLY)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/flashattnConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/flashattnConfigVersion.cmake
  DESTINATION ${FLASHATTN_INSTALL_CMAKEDIR})

# pkg-config: the prefix is written relative to the .pc file's own directory.
if(IS_ABSOLUTE "${FLASHATTN_INSTALL_PKGCONFIGDIR}")
  set(FA_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _fa_pc_up "/prefix/${FLASHATTN_INSTALL_PKGCONFIGDIR}" "/prefix")
  string(REGEX REPLACE "/$" "" _fa_pc_up "${_fa_pc_up}")
  set(FA_PC_PREFIX "\${pcfiledir}/${_fa_pc_up}")
endif()
foreach(_fa_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_fa_dir}}")
    set(FA_PC_${_fa_dir} "${CMAKE_INSTALL_${_fa_dir}}")
  else()
    set(FA_PC_${_fa_dir} "\${prefix}/${CMAKE_INSTALL_${_fa_dir}}")
  endif()
endforeach()
# What a static link needs on top of libflashattn.a and hwloc (Requires.private).
set(FA_PC_OPENMP_FLAGS "${OpenMP_C_FLAGS}")
if(NOT FA_PC_OPENMP_FLAGS)
  set(FA_PC_OPENMP_FLAGS "-fopenmp")
endif()
configure_file(cmake/flashattn.pc.in ${CMAKE_CURRENT_BINARY_DIR}/flashattn.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/flashattn.pc DESTINATION ${FLASHATTN_INSTALL_PKGCONFIGDIR})
if(FA_MPI)
  include(${CMAKE_CURRENT_LIST_DIR}/mpi_pkgconfig.cmake)
endif()
