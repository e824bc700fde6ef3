#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Makes sure the Debian packages flashattn needs are installed.
#
#   scripts/deps.sh [build|test|bench|aarch64]      run it, or
#   source scripts/deps.sh; fa_deps test
#
#   build: cmake, make, gcc (with libgomp for OpenMP), libc6-dev, pkg-config, libhwloc-dev
#   test:  build + libcriterion-dev (the test suite) + libudev-dev (hwloc.pc lists -ludev in its
#          Libs.private, so `pkg-config --static --libs flashattn` needs libudev.so to link)
#          + clang-format (scripts/format.sh --check, the style stage of scripts/test.sh)
#          + the reliability stages of scripts/test.sh and scripts/fuzz.sh: clang (the TSan and
#          libFuzzer builds), libclang-rt-14-dev (clang 14's sanitizer and libFuzzer runtimes),
#          libomp-dev (LLVM's OpenMP runtime and Archer, libarcher.so, for TSan) and valgrind
#          + openmpi-bin and libopenmpi-dev: MPI (mpicc, mpirun, mpi.h) for the optional MPI component,
#          libflashattn_mpi, which its tests and the consumer run under mpirun. Not in build: the
#          library builds and installs without MPI (FLASHATTN_MPI=AUTO leaves the component out)
#          + python3: tests/abi/ffi_mirror.py (ctypes, in the standard library) and bench/compare_torch.py
#          + python3-venv, python3-dev and g++: the Python package's stage (virtual environments, Python.h
#          for its extension module where the interpreter is Debian's, and the C++ compiler that
#          torch.compile's CPU code generation runs in tests/python)
#   bench: build + libopenblas-dev (fa-bench's unfused BLAS baseline) + gnuplot-nox
#          (scripts/thread_sweep.sh's plot); fa-bench builds and runs without both
#   aarch64: scripts/test.sh's emulated aarch64 stage: the cross compiler (gcc-aarch64-linux-gnu, with
#          its binutils, objdump among them), qemu-user (qemu-aarch64: SVE, SVE2, BF16 and I8MM at any
#          vector length), and arm64 hwloc from Debian's multiarch packages (libhwloc-dev:arm64; the
#          arm64 architecture is added to dpkg first), with libgomp1:arm64, so that qemu-aarch64 -L / runs
#          the programs against arm64's own / as an arm64 machine would (with the cross toolchain's
#          /usr/aarch64-linux-gnu as -L, a fork() under qemu 7.2 never returns in the child). Not
#          libcriterion-dev:arm64: in Debian 12 it and
#          libcriterion3 (and their libnanomsg5, libgit2-dev) are not Multi-Arch: same, so apt installs
#          the arm64 ones only by REMOVING the amd64 Criterion the native suite needs. The emulated
#          suite runs on tests/shim's stand-in for Criterion's runner instead, which needs no library.
#
# Packages already installed are detected with dpkg-query, so this is quick when nothing is missing.
# As root, missing packages are installed with apt-get (update, then install -y). Otherwise the
# missing packages are named and the status is non-zero: install them, or rerun as root.

fa_deps_packages() {
    local pkgs="cmake make gcc libc6-dev pkg-config libhwloc-dev"
    case "${1:-build}" in
    build) ;;
    test) pkgs="$pkgs libcriterion-dev libudev-dev clang clang-format libclang-rt-14-dev libomp-dev valgrind openmpi-bin libopenmpi-dev python3 python3-venv python3-dev g++" ;;
    bench) pkgs="$pkgs libopenblas-dev gnuplot-nox" ;;
    aarch64) pkgs="cmake make pkg-config gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libhwloc-dev:arm64 libgomp1:arm64" ;;
    *) echo "deps: unknown set '$1' (build|test|bench|aarch64)" >&2; return 2 ;;
    esac
    echo "$pkgs"
}

fa_deps() {
    local set=${1:-build} pkgs missing="" p
    pkgs=$(fa_deps_packages "$set") || return
    if ! command -v dpkg-query >/dev/null 2>&1; then
        # Not Debian: check the tools and pkg-config modules instead of package names.
        local m
        for m in cmake make cc pkg-config; do
            command -v "$m" >/dev/null 2>&1 || missing="$missing $m"
        done
        [ "$set" = bench ] && { command -v gnuplot >/dev/null 2>&1 || missing="$missing gnuplot"; }
        if [ "$set" = aarch64 ]; then
            for m in aarch64-linux-gnu-gcc aarch64-linux-gnu-objdump qemu-aarch64; do
                command -v "$m" >/dev/null 2>&1 || missing="$missing $m"
            done
        fi
        if [ "$set" = test ]; then
            for m in clang valgrind mpicc mpirun python3 c++; do command -v "$m" >/dev/null 2>&1 || missing="$missing $m"; done
        fi
        if command -v pkg-config >/dev/null 2>&1; then
            pkg-config --exists 'hwloc >= 2.0' || missing="$missing hwloc(>=2.0,pkg-config)"
            [ "$set" = test ] && { pkg-config --exists criterion || missing="$missing criterion(pkg-config)"; }
            [ "$set" = bench ] && { pkg-config --exists openblas || missing="$missing openblas(pkg-config)"; }
        fi
        if [ -n "$missing" ]; then
            echo "deps: missing:$missing (not a Debian system: install them with your package manager)" >&2
            return 1
        fi
        echo "deps: ok (no dpkg; tools and pkg-config modules found)"
        return 0
    fi
    # installed for the architecture asked (p:arm64), or for this machine's (or all): with arm64 added,
    # dpkg-query answers for both architectures of a name, and an arm64 pkg-config is not this one
    local native
    native=$(dpkg --print-architecture)
    for p in $pkgs; do
        local want=$native
        case $p in *:*) want=${p##*:} ;; esac
        if ! dpkg-query -W -f='${db:Status-Abbrev}${Architecture}\n' "$p" 2>/dev/null | grep -qE "^ii ($want|all)\$"; then
            missing="$missing $p"
        fi
    done
    if [ -z "$missing" ]; then
        echo "deps: ok ($pkgs)"
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "deps: missing packages:$missing" >&2
        echo "deps: install them with:  sudo apt-get install -y$missing   (or run this script as root)" >&2
        return 1
    fi
    echo "deps: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    # another architecture's packages (libhwloc-dev:arm64) need it added to dpkg before apt-get update
    local arch
    for arch in $(printf '%s\n' $missing | sed -n 's/.*:\([a-z0-9]*\)$/\1/p' | sort -u); do
        if [ "$arch" != "$(dpkg --print-architecture)" ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
            echo "deps: dpkg --add-architecture $arch"
            dpkg --add-architecture "$arch" || { echo "deps: dpkg --add-architecture $arch failed" >&2; return 1; }
        fi
    done
    # shellcheck disable=SC2086
    if ! { apt-get update -q && apt-get install -y -q --no-install-recommends $missing; }; then
        echo "deps: apt-get failed to install:$missing" >&2
        return 1
    fi
}

# Run directly (not sourced): check/install the set named by $1.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    fa_deps "${1:-build}"
fi
