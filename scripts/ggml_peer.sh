#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/ggml_peer.sh — ggml's CPU flash_attn_ext on fa-bench's decode shapes, side by side.
#
#   scripts/ggml_peer.sh GGML_SOURCE_DIR [fa-ggml-peer options...]
#   scripts/ggml_peer.sh ~/src/ggml --threads 1,2 --rounds 2 --csv results/ggml-decode-batch.csv
#   scripts/ggml_peer.sh ~/src/ggml --nk 32768          # the decode preset's shape
#
# flashattn never fetches or builds ggml: not the library, not its tests, not CI. This script builds
# the ggml checkout YOU name (github.com/ggml-org/ggml, or llama.cpp's ggml/ directory), Release with
# GGML_NATIVE=ON, in $GGML_PEER_BUILD_DIR (default build-ggml-peer/), then compiles
# bench/peers/ggml/ggml_peer.c against it as fa-ggml-peer and runs it with the remaining arguments
# (fa-ggml-peer --help). Its rows use fa-bench's column names; compare them with
#   fa-bench --preset decode-kv ...      (or --decode-batch 16:1024-32768 --h 8 --d 128 --kv-dtype f16|i8)
#   fa-bench --preset decode --kv-dtype f16|i8
# run on the same machine, thread counts and seed (bench/README.md, "The scripts").
# Environment: GGML_PEER_BUILD_DIR, FA_JOBS (build jobs, default nproc), CC (default cc).
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi
ggml=$(cd "$1" && pwd)
shift
if [ ! -f "$ggml/include/ggml.h" ] || [ ! -f "$ggml/CMakeLists.txt" ]; then
    echo "ggml_peer.sh: $ggml is not a ggml source tree (no include/ggml.h and CMakeLists.txt)" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GGML_PEER_BUILD_DIR:-$root/build-ggml-peer}
jobs=${FA_JOBS:-$(nproc)}

mkdir -p "$build"
log=$build/ggml-build.log
echo "ggml_peer.sh: building ggml from $ggml in $build/ggml (log: $log)" >&2
cmake -S "$ggml" -B "$build/ggml" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=ON \
    -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
cmake --build "$build/ggml" -j "$jobs" >>"$log" 2>&1 || { tail -40 "$log" >&2; exit 1; }

cpu_lib=$(find "$build/ggml/" -name 'libggml-cpu.so' -print -quit)
if [ -z "$cpu_lib" ]; then
    echo "ggml_peer.sh: no libggml-cpu.so under $build/ggml" >&2
    exit 1
fi
lib=$(dirname "$cpu_lib")
source_id=$(git -C "$ggml" describe --always --dirty 2>/dev/null || echo "$ggml")
# ggml's headers go in as system headers: fa-ggml-peer's own code is held to fa-bench's warnings.
"${CC:-cc}" -std=c11 -O2 -fopenmp -Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion \
    -isystem "$ggml/include" -I"$root/tests/kit" "$root/bench/peers/ggml/ggml_peer.c" \
    -L"$lib" -Wl,-rpath,"$lib" -lggml -lggml-base -lggml-cpu -lm -o "$build/fa-ggml-peer"
exec "$build/fa-ggml-peer" --source "$source_id" "$@"
