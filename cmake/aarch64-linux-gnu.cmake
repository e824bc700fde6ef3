# SPDX-License-Identifier: BSD-3-Clause
# Cross build for aarch64 Linux with Debian's cross compiler (gcc-aarch64-linux-gnu) against arm64
# libraries from Debian's multiarch packages (libhwloc-dev:arm64), as scripts/deps.sh aarch64
# installs them:
#   cmake -B build-arm -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake ...
# The programs it builds run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR: ctest runs them there);
# scripts/test.sh's emulated stage picks the CPU and SVE vector length per run.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(FA_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${FA_CROSS_TRIPLE}-gcc)
set(CMAKE_LINKER ${FA_CROSS_TRIPLE}-ld)
set(CMAKE_OBJCOPY ${FA_CROSS_TRIPLE}-objcopy)
set(CMAKE_AR ${FA_CROSS_TRIPLE}-ar)
set(CMAKE_RANLIB ${FA_CROSS_TRIPLE}-ranlib)
# The cross libc lives in /usr/aarch64-linux-gnu, multiarch libraries in /usr/lib/aarch64-linux-gnu
# (the cross compiler searches both); nothing of the host's is to be found.
set(CMAKE_FIND_ROOT_PATH /usr/${FA_CROSS_TRIPLE} /usr/lib/${FA_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config reads the arm64 .pc files only (hwloc.pc of libhwloc-dev:arm64), never the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${FA_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
# qemu-user runs the programs: -L for the dynamic loader's libraries (libc6:arm64 is multiarch, so
# the loader and libraries lie in / as on an arm64 machine). -cpu max: every feature qemu emulates.
find_program(FA_QEMU_AARCH64 qemu-aarch64)
if(FA_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${FA_QEMU_AARCH64} -L / -cpu max)
endif()
