#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds and runs the consumer program against an installed flashattn, both ways:
#   1. CMake:      find_package(flashattn) -> flashattn::flashattn and flashattn::flashattn_static
#   2. pkg-config: cc main.c $(pkg-config --cflags --libs flashattn)            (shared)
#                  cc main.c $(pkg-config --static --cflags --libs flashattn)   (static libflashattn.a)
# and compiles + runs the API example of README.md as it is written there. Before that: the package's
# version rule (version_rule.cmake: a later release of the same ABI version takes a request for this
# one, another ABI version's does not) and the soname (libflashattn.so.FLASHATTN_ABI_VERSION).
# Where PREFIX has the MPI component (flashattn_mpi.h), tests/consumer/mpi/ is built the same ways:
#   3. CMake:      find_package(flashattn COMPONENTS mpi) -> flashattn::mpi and flashattn::mpi_static
#   4. pkg-config: mpicc and cc main.c $(pkg-config --cflags --libs flashattn-mpi), and --static
# each run on 2 ranks through scripts/mpirun.sh (mpirun -np 2 --oversubscribe, --allow-run-as-root
# as root). Where it has none, find_package(flashattn COMPONENTS mpi) must fail and say why.
#
# usage: tests/consumer/run.sh PREFIX [WORKDIR]
#   PREFIX   where flashattn is installed (cmake --install BUILD --prefix PREFIX)
#   WORKDIR  scratch directory for the builds (default: a new temporary one)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
prefix=${1:?usage: $0 PREFIX [WORKDIR]}
prefix=$(cd "$prefix" && pwd)
work=${2:-$(mktemp -d "${TMPDIR:-/tmp}/fa-consumer.XXXXXX")}
mkdir -p "$work"
cc=${CC:-cc}
jobs=${FA_JOBS:-$(nproc)}

step() { printf '\n--- consumer: %s\n' "$*"; }

# The static binaries must not need libflashattn.so at run time.
assert_static() {
    if readelf -d "$1" | grep -q 'NEEDED.*libflashattn'; then
        echo "consumer: $1 links libflashattn.so, expected the static library" >&2
        exit 1
    fi
}
# The shared binaries must load the library from PREFIX, not from somewhere else on the system.
assert_shared_from_prefix() { # assert_shared_from_prefix EXE [LIBRARY (default libflashattn)]
    local lib name=${2:-libflashattn}
    lib=$(ldd "$1" | awk -v so="$name.so" 'index($1, so) == 1 {print $3}')
    case "$lib" in
    "$prefix"/*) echo "$1 -> $lib" ;;
    *) echo "consumer: $1 loads $name from '$lib', expected under $prefix" >&2; exit 1 ;;
    esac
}

# Both libraries export exactly the calls the header declares with FA_API (the ABI policy): no
# internal helper (fa_arena_alloc, fa_size_mul3, ...) a program could call or collide with.
assert_public_symbols() {
    local header=$1 lib=$2 want have extra missing
    want=$(grep -o '^FA_API [^(]*(' "$header" | sed 's/ *($//; s/.*[ *]//' | sort -u)
    if [[ $lib == *.a ]]; then
        have=$(nm -g --defined-only "$lib" | awk 'NF == 3 {print $3}' | sort -u)
    else
        have=$(nm -D --defined-only "$lib" | awk 'NF == 3 && $3 !~ /^_/ {print $3}' | sort -u)
    fi
    extra=$(comm -13 <(echo "$want") <(echo "$have"))
    missing=$(comm -23 <(echo "$want") <(echo "$have"))
    if [ -n "$extra" ] || [ -n "$missing" ]; then
        echo "consumer: $lib exports [$(echo $extra)] beyond the header, lacks [$(echo $missing)]" >&2
        exit 1
    fi
    echo "$lib: exports the $(echo "$want" | wc -l) public calls only"
}

step "exported symbols"
header=$(find "$prefix" -name flashattn.h -print -quit)
for lib in $(find "$prefix" -name 'libflashattn.a' -o -name 'libflashattn.so.*.*' -type f); do
    assert_public_symbols "$header" "$lib"
done
# The MPI component's libraries export the calls of flashattn_mpi.h alone (the core's stay in the core).
mpi_header=$(find "$prefix" -name flashattn_mpi.h -print -quit)
if [ -n "$mpi_header" ]; then
    mpi_libs=$(find "$prefix" -name 'libflashattn_mpi.a' -o -name 'libflashattn_mpi.so.*.*' -type f)
    [ "$(echo "$mpi_libs" | wc -w)" = 2 ] ||
        { echo "consumer: $mpi_header installed, but not both libflashattn_mpi libraries: [$mpi_libs]" >&2; exit 1; }
    for lib in $mpi_libs; do
        assert_public_symbols "$mpi_header" "$lib"
    done
fi

step "version rule and soname"
version_file=$(find "$prefix" -name flashattnConfigVersion.cmake -print -quit)
[ -n "$version_file" ] || { echo "consumer: no flashattnConfigVersion.cmake under $prefix" >&2; exit 1; }
mkdir -p "$work/version-rule"
cmake -DVERSION_FILE="$version_file" -DTEMPLATE="$root/cmake/flashattnConfigVersion.cmake.in" \
    -DWORK="$work/version-rule" -P "$here/version_rule.cmake"
abi=$(sed -n 's/^#define FLASHATTN_ABI_VERSION \([0-9]*\).*/\1/p' "$header")
for lib in $(find "$prefix" -name 'libflashattn*.so.*.*' -type f); do
    soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    case "$soname" in
    libflashattn.so."$abi" | libflashattn_mpi.so."$abi") echo "$lib: soname $soname" ;;
    *) echo "consumer: $lib has soname '$soname', expected lib*.so.$abi (FLASHATTN_ABI_VERSION)" >&2; exit 1 ;;
    esac
done

step "find_package (CMAKE_PREFIX_PATH=$prefix)"
cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$work/cmake-configure.log" \
    || { cat "$work/cmake-configure.log"; exit 1; }
grep -- '-- flashattn ' "$work/cmake-configure.log" || true
# Plain find_package(flashattn) asks for no component, so it must not need (or look for) MPI.
if grep -q 'Found MPI' "$work/cmake-configure.log"; then
    echo "consumer: find_package(flashattn) without COMPONENTS looked for MPI" >&2
    exit 1
fi
cmake --build "$work/cmake" -j "$jobs"
assert_shared_from_prefix "$work/cmake/consumer_shared"
assert_static "$work/cmake/consumer_static"
step "run consumer_shared (find_package, flashattn::flashattn)"
"$work/cmake/consumer_shared"
step "run consumer_static (find_package, flashattn::flashattn_static)"
"$work/cmake/consumer_static"

step "pkg-config"
pcfile=$(find "$prefix" -name flashattn.pc -print -quit)
[ -n "$pcfile" ] || { echo "consumer: no flashattn.pc under $prefix" >&2; exit 1; }
PKG_CONFIG_PATH="$(dirname "$pcfile")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
echo "flashattn $(pkg-config --modversion flashattn) from $pcfile"
echo "cflags:        $(pkg-config --cflags flashattn)"
echo "libs:          $(pkg-config --libs flashattn)"
echo "libs --static: $(pkg-config --static --libs flashattn)"
libdir=$(pkg-config --variable=libdir flashattn)

# Shared: exactly the command a user types (plus an rpath, since PREFIX is not a system directory).
# shellcheck disable=SC2046
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -o "$work/pc_shared" "$here/main.c" \
    $(pkg-config --cflags --libs flashattn) -lm -Wl,-rpath,"$libdir"
assert_shared_from_prefix "$work/pc_shared"
step "run pc_shared (pkg-config, libflashattn.so)"
"$work/pc_shared"

# Static: --static adds Libs.private (OpenMP, libm) and hwloc's; -l:libflashattn.a picks the archive
# even though libflashattn.so sits next to it.
static_libs=$(pkg-config --static --libs flashattn | sed 's/-lflashattn\b/-l:libflashattn.a/')
# shellcheck disable=SC2046,SC2086
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -o "$work/pc_static" "$here/main.c" \
    $(pkg-config --static --cflags flashattn) $static_libs -lm
assert_static "$work/pc_static"
step "run pc_static (pkg-config --static, libflashattn.a)"
"$work/pc_static"

# Every marked example block of README.md (example, example-backward, example-modifiers, example-varlen,
# example-quantized), compiled as written and run.
for block in example example-backward example-modifiers example-varlen example-quantized; do
    step "README.md $block block, compiled as written"
    awk -v b="$block" '$0 == "<!-- " b ":begin -->" {on = 1; next} $0 == "<!-- " b ":end -->" {on = 0} on && !/^```/' \
        "$root/README.md" >"$work/readme_$block.c"
    [ -s "$work/readme_$block.c" ] || { echo "consumer: no $block block in README.md" >&2; exit 1; }
    # shellcheck disable=SC2046
    "$cc" -std=c11 -O2 -Wall -Wextra -Werror -o "$work/readme_$block" "$work/readme_$block.c" \
        $(pkg-config --cflags --libs flashattn) -lm -Wl,-rpath,"$libdir"
    "$work/readme_$block"
done

mpi_summary="no MPI component in PREFIX, and find_package(flashattn COMPONENTS mpi) says so"
if [ -z "$mpi_header" ]; then
    step "find_package(flashattn COMPONENTS mpi) without the MPI component: must fail and say why"
    if cmake -S "$here/mpi" -B "$work/cmake-mpi-absent" -DCMAKE_PREFIX_PATH="$prefix" \
        >"$work/cmake-mpi-absent.log" 2>&1; then
        echo "consumer: find_package(flashattn COMPONENTS mpi) succeeded on an install without it" >&2
        exit 1
    fi
    grep 'has no MPI component' "$work/cmake-mpi-absent.log" ||
        { cat "$work/cmake-mpi-absent.log"; echo "consumer: the failure does not say why" >&2; exit 1; }
else
    mpirun_2=("$root/scripts/mpirun.sh" 2)
    # A hang (a rank stuck in a collective) fails the step instead of stalling the run.
    run_mpi() { # run_mpi EXE
        step "run $(basename "$1") on 2 ranks"
        timeout 120 "${mpirun_2[@]}" "$1"
    }
    step "find_package(flashattn COMPONENTS mpi)"
    cmake -S "$here/mpi" -B "$work/cmake-mpi" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
        >"$work/cmake-mpi-configure.log" || { cat "$work/cmake-mpi-configure.log"; exit 1; }
    grep -- '-- flashattn ' "$work/cmake-mpi-configure.log" || true
    cmake --build "$work/cmake-mpi" -j "$jobs"
    assert_shared_from_prefix "$work/cmake-mpi/mpi_consumer_shared"
    assert_shared_from_prefix "$work/cmake-mpi/mpi_consumer_shared" libflashattn_mpi
    assert_static "$work/cmake-mpi/mpi_consumer_static"
    run_mpi "$work/cmake-mpi/mpi_consumer_shared"
    run_mpi "$work/cmake-mpi/mpi_consumer_static"

    step "pkg-config flashattn-mpi"
    echo "flashattn-mpi $(pkg-config --modversion flashattn-mpi)"
    echo "cflags --libs: $(pkg-config --cflags --libs flashattn-mpi)"
    mpi_libdir=$(pkg-config --variable=libdir flashattn-mpi)
    # The line links an MPI program both with the MPI compiler wrapper and with plain cc.
    for compiler in mpicc "$cc"; do
        exe=$work/pc_mpi_$(basename "$compiler")
        # shellcheck disable=SC2046
        "$compiler" -std=c11 -O2 -Wall -Wextra -Werror -o "$exe" "$here/mpi/main.c" \
            $(pkg-config --cflags --libs flashattn-mpi) -lm -Wl,-rpath,"$mpi_libdir"
        assert_shared_from_prefix "$exe"
        assert_shared_from_prefix "$exe" libflashattn_mpi
        run_mpi "$exe"
    done
    mpi_static_libs=$(pkg-config --static --libs flashattn-mpi |
        sed 's/-lflashattn_mpi\b/-l:libflashattn_mpi.a/; s/-lflashattn\b/-l:libflashattn.a/')
    # shellcheck disable=SC2046,SC2086
    "$cc" -std=c11 -O2 -Wall -Wextra -Werror -o "$work/pc_mpi_static" "$here/mpi/main.c" \
        $(pkg-config --static --cflags flashattn-mpi) $mpi_static_libs -lm
    assert_static "$work/pc_mpi_static"
    run_mpi "$work/pc_mpi_static"
    mpi_summary="MPI component: find_package shared+static, pkg-config with mpicc and cc and static, on 2 ranks"
fi

printf '\nconsumer: all builds and runs passed (find_package shared+static, pkg-config shared+static, README examples; %s)\n' \
    "$mpi_summary"
