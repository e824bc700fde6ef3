#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/bench.sh — build fa-bench (Release, tests off) and time the forward pass on a default shape.
#
#   scripts/bench.sh                 B=1, H=8, Nq=Nk=2048, D=64, f32; non-causal, then causal (top-left);
#                                    threads 1 and $(nproc)
#   scripts/bench.sh ARGS...         the same two runs with ARGS appended to fa-bench's command line
#                                    (a later option wins: --nq 4096 (Nk follows Nq unless --nk is given),
#                                    --dtype f64, --threads 1,2,4, ...);
#                                    if ARGS contain --causal, one run only. scripts/bench.sh --help lists them.
#   scripts/bench.sh --preset NAME   one run of a preset's shapes (prefill, decode, scaling, long-bwd,
#                                    window, modifiers; fa-bench --help describes them), threads 1 and
#                                    $(nproc) unless ARGS give --threads
#   scripts/bench.sh --softcap 50    score modifiers (--window L,R, --softcap C, --alibi,
#                                    --bias keypad|full, --sinks) go to fa-bench like any option
#
# The bench package set (scripts/deps.sh bench: OpenBLAS for the BLAS baseline, gnuplot for
# scripts/thread_sweep.sh) is optional: missing, it is named and the run goes on without it. The
# baseline runs only with --blas-reps N (1 to 3 is enough); for its figures, unset OPENBLAS_CORETYPE
# and OPENBLAS_L2_SIZE unless fa-bench warns about OpenBLAS's core (fa-bench --help).
#
# fa-bench checks each thread count's output against a float64 oracle on a sample of rows, and that
# every thread count gives bitwise identical output, before it reports a speed; it exits non-zero
# (and so does this script) if a check fails. Under each table it marks a row "disturbed:" when its
# median time is over 1.10x its min or an in-run probe varied as much (a busy machine, or more
# threads than CPUs), and counts those rows again at the end of its run: their speedups are not
# reliable.
# Environment: FA_BENCH_BUILD_DIR (default build-bench/), FA_JOBS (default nproc).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/deps.sh
source "$root/scripts/deps.sh"
build=${FA_BENCH_BUILD_DIR:-$root/build-bench}
jobs=${FA_JOBS:-$(nproc)}

banner() { printf '\n==== %s ====\n' "$*"; }

banner "deps"
fa_deps build
fa_deps bench || echo "bench.sh: going on without the optional bench packages (no BLAS baseline or sweep plot)"

banner "build fa-bench (Release, $(basename "$build"))"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFLASHATTN_BUILD_BENCH=ON -DFLASHATTN_BUILD_TESTS=OFF \
    >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$jobs" --target fa-bench
bench=$(find "$build" -name fa-bench -type f -perm -u+x -print -quit)
[ -n "$bench" ] || { echo "bench.sh: no fa-bench under $build" >&2; exit 1; }

cpus=$(nproc)
threads=1
[ "$cpus" -gt 1 ] && threads="1,$cpus"
# No --nk: fa-bench takes Nk = Nq, so `--nq 4096` alone gives a square 4096 problem.
defaults=(--b 1 --h 8 --nq 2048 --d 64 --dtype f32 --threads "$threads")

for a in "$@"; do
    case "$a" in
    -h | --help) exec "$bench" --help ;;
    esac
done
causal_runs=(none top-left)
for a in "$@"; do
    case "$a" in
    --causal | --causal=*) causal_runs=("") ;;
    --preset | --preset=*) # the preset's shapes, not the defaults above
        banner "fa-bench --threads $threads $*"
        exec "$bench" --threads "$threads" "$@" ;;
    esac
done

for c in "${causal_runs[@]}"; do
    args=("${defaults[@]}")
    [ -n "$c" ] && args+=(--causal "$c")
    args+=("$@")
    banner "fa-bench ${args[*]}"
    "$bench" "${args[@]}"
done
