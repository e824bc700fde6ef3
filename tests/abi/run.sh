#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The ABI stage of scripts/test.sh (tests/abi/README.md): programs built against one layout of the
# size-tagged structs run on a library built against another.
#
#   tests/abi/run.sh BUILD GROWN_BUILD WORK
#     BUILD        a build of the library (libflashattn.so.N in it), e.g. build/
#     GROWN_BUILD  where the grown library is built, with BUILD's compiler, build type and flags
#                  (-DFLASHATTN_ABI_GROWN=ON: every size-tagged struct one 8-byte field longer)
#     WORK         scratch directory for the clients and their outputs
#
# 1. client.c compiled against frozen/flashattn.h (0.4.0) runs on the normal and the grown library:
#    the same bytes from every call, nothing written past its fa_stats.
# 2. client.c compiled against the grown header runs on the normal library: with the new fields
#    zero, the same bytes; with each one set, FA_ERR_UNSUPPORTED for exactly the call that reads it,
#    nothing written. On the grown library: the same bytes, and the grown fa_stats field filled.
# 3. ffi_mirror.py (ctypes, the 0.4.0 fa_params and fa_tensor) on both libraries: the bytes of the
#    same problem computed from C.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -eq 3 ] || { echo "usage: $0 BUILD GROWN_BUILD WORK" >&2; exit 2; }
normal=$(cd "$1" && pwd)
grown=$2
work=$3
mkdir -p "$grown" "$work"
grown=$(cd "$grown" && pwd)
work=$(cd "$work" && pwd)
jobs=${FA_JOBS:-$(nproc)}

cache() { sed -n "s/^$1:[A-Z]*=//p" "$normal/CMakeCache.txt"; }
step() { printf '\n--- abi: %s\n' "$*"; }

step "the grown library (-DFLASHATTN_ABI_GROWN=ON), built as $normal's"
build_type=$(cache CMAKE_BUILD_TYPE)
type_flags_var=CMAKE_C_FLAGS_$(echo "$build_type" | tr '[:lower:]' '[:upper:]')
compiler=$(cache CMAKE_C_COMPILER)
cmake -S "$root" -B "$grown" -DFLASHATTN_ABI_GROWN=ON -DFLASHATTN_WERROR=ON -DCMAKE_BUILD_TYPE="$build_type" \
    -DCMAKE_C_COMPILER="$compiler" "-DCMAKE_C_FLAGS=$(cache CMAKE_C_FLAGS)" \
    "-D$type_flags_var=$(cache "$type_flags_var")" >"$work/grown-configure.log" ||
    { cat "$work/grown-configure.log"; exit 1; }
cmake --build "$grown" -j "$jobs" --target flashattn
soname=$(readelf -d "$normal"/libflashattn.so | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ -e "$grown/$soname" ] || { echo "abi: no $soname in $grown" >&2; exit 1; }

step "clients: client.c against frozen/flashattn.h (0.4.0) and against the grown header"
# Linked against the normal library, without an rpath: LD_LIBRARY_PATH picks the library each run.
flags=(-std=c11 -O2 -Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion -Werror)
cc=${CC:-cc}
"$cc" "${flags[@]}" -I"$here/frozen" "$here/client.c" "$here/world.c" -L"$normal" -lflashattn -lm \
    -o "$work/client-0.4.0"
"$cc" "${flags[@]}" -DFA_ABI_GROWN_CLIENT -I"$grown/abi-grown/include" "$here/client.c" "$here/world.c" \
    "$here/client_unknown.c" -L"$normal" -lflashattn -lm -o "$work/client-grown"

# on LIBDIR EXE ARGS...: runs EXE with LIBDIR's libflashattn, after checking that it is the one loaded.
on() {
    local dir=$1 loaded
    shift
    loaded=$(LD_LIBRARY_PATH=$dir ldd "$1" | awk -v so="$soname" '$1 == so {print $3}')
    [ "$(dirname "$loaded")" = "$dir" ] || { echo "abi: $1 loads '$loaded', not $dir/$soname" >&2; return 1; }
    LD_LIBRARY_PATH=$dir "$@"
}
same() { # same A B WHAT
    cmp "$1" "$2" >/dev/null || { echo "abi: $3: $(cmp "$1" "$2" 2>&1)" >&2; return 1; }
    echo "identical: $3"
}

step "the 0.4.0 client on both libraries"
on "$normal" "$work/client-0.4.0" normal "$work/old-on-normal.bin" "$work/ffi-c.bin"
on "$grown" "$work/client-0.4.0" grown "$work/old-on-grown.bin" "$work/ffi-c-2.bin"
same "$work/old-on-normal.bin" "$work/old-on-grown.bin" "0.4.0 client: the grown library's bytes and the normal one's"

step "the grown client on both libraries"
on "$normal" "$work/client-grown" normal "$work/new-on-normal.bin" "$work/ffi-c-3.bin"
same "$work/old-on-normal.bin" "$work/new-on-normal.bin" "grown client with its new fields zero, on the normal library"
on "$normal" "$work/client-grown" normal --unknown-fields
on "$grown" "$work/client-grown" grown "$work/new-on-grown.bin" "$work/ffi-c-4.bin"
same "$work/old-on-normal.bin" "$work/new-on-grown.bin" "grown client on the grown library"

step "the FFI mirror (ctypes) on both libraries"
for lib in normal grown; do
    dir=$normal
    [ $lib = grown ] && dir=$grown
    python3 "$here/ffi_mirror.py" "$dir/$soname" "$work/ffi-$lib.bin"
    same "$work/ffi-c.bin" "$work/ffi-$lib.bin" "ffi_mirror.py on the $lib library and the C client"
done
for x in 2 3 4; do same "$work/ffi-c.bin" "$work/ffi-c-$x.bin" "the C client's FFI problem, run $x"; done

echo
echo "abi: 0.4.0 and grown clients on the 0.4.0 and grown libraries, and the ctypes mirror: identical bytes;" \
    "unknown fields refused by exactly their calls"
