#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/fuzz.sh [SECONDS] — fuzz the public API with libFuzzer for SECONDS (default 60).
#
#   1. deps      scripts/deps.sh test (clang and its libFuzzer runtime, libclang-rt-14-dev, among them)
#   2. build     build-fuzz/ (FA_FUZZ_BUILD_DIR) with clang: -DFLASHATTN_FUZZ=ON, so the library and
#                tests/fuzz/fuzz_api.c are built with -fsanitize=fuzzer,address,undefined (the SIMD
#                tables without UBSan: CMakeLists.txt says why)
#   3. replay    the checked-in seeds (tests/fuzz/corpus) once each: a failure there is a regression
#   4. fuzz      fa-fuzz-api on a copy of the seeds, -max_total_time=SECONDS -jobs=1, one input at
#                most FA_FUZZ_INPUT_TIMEOUT seconds (default 25; longer counts as a hang)
#
# Prints "fuzz: N executions in S s, K crashes (...)" and exits non-zero when K > 0; the inputs that
# crashed (crash-*, leak-*, timeout-*, oom-*) are kept in FA_FUZZ_ARTIFACTS (default
# results/fuzz-artifacts/) with libFuzzer's log, and replay with:
#   build-fuzz/tests/fuzz/fa-fuzz-replay results/fuzz-artifacts/crash-...
# New inputs the run found stay in a temporary copy (deleted) unless FA_FUZZ_KEEP_CORPUS=DIR names
# where to keep them; the checked-in seeds only change through tests/fuzz/make_corpus.c.
#
# Environment: FA_FUZZ_BUILD_DIR, FA_JOBS (build jobs, default nproc), FA_FUZZ_ARGS (more libFuzzer
# options), FA_FUZZ_ARTIFACTS, FA_FUZZ_KEEP_CORPUS, FA_FUZZ_INPUT_TIMEOUT, OMP_WAIT_POLICY (default
# passive here).
# A long run: scripts/fuzz.sh 3600.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/deps.sh
source "$root/scripts/deps.sh"

seconds=${1:-60}
case "$seconds" in '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac
build=${FA_FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${FA_JOBS:-$(nproc)}
artifacts=${FA_FUZZ_ARTIFACTS:-$root/results/fuzz-artifacts}
read -r -a extra <<<"${FA_FUZZ_ARGS:-}"

fa_deps test >/dev/null
command -v clang >/dev/null || { echo "fuzz.sh: clang not found" >&2; exit 2; }

echo "fuzz.sh: building $build (clang, -DFLASHATTN_FUZZ=ON)"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g" -DFLASHATTN_WERROR=ON -DFLASHATTN_FUZZ=ON \
    -DFLASHATTN_BUILD_TESTS=OFF -DFLASHATTN_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target fa-fuzz-api fa-fuzz-replay >/dev/null
fuzzer=$build/tests/fuzz/fa-fuzz-api

"$build/tests/fuzz/fa-fuzz-replay" "$root/tests/fuzz/corpus"

work=$(mktemp -d "${TMPDIR:-/tmp}/fa-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
cp "$root"/tests/fuzz/corpus/* "$work/corpus/"
# Every seed has the full input size; longer inputs would only carry ignored bytes.
seeds=("$work"/corpus/*)
max_len=$(wc -c <"${seeds[0]}")

# Passive waiting: between two calls the harness checks results on one thread, and spinning OpenMP
# workers would take the other core of a 2-core machine from it (about 1.7x more executions).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
echo "fuzz.sh: fuzzing for ${seconds}s from ${#seeds[@]} seeds (max_len $max_len, OMP_WAIT_POLICY=$OMP_WAIT_POLICY)"
rc=0
# -jobs=1 runs the fuzzer in a child process writing fuzz-0.log in the current folder.
# A fixed seed (FA_FUZZ_SEED, default 1; 0 = random) makes the sequence of inputs the same on every
# run: a CI run then meets only inputs a developer's run of the same length has met, instead of
# failing on fresh ones at landing time. Longer or random-seed runs are how new inputs are explored.
(cd "$work" && "$fuzzer" -seed="${FA_FUZZ_SEED:-1}" -max_total_time="$seconds" -jobs=1 -workers=1 -max_len="$max_len" \
    -timeout="${FA_FUZZ_INPUT_TIMEOUT:-25}" -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "${extra[@]}" "$work/corpus" >"$work/driver.log" 2>&1) || rc=$?
log=$work/fuzz-0.log
[ -f "$log" ] || log=$work/driver.log

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
if [ -z "$execs" ]; then # killed before its final stats: the last status line has the count
    execs=$(grep -o '^#[0-9]*' "$log" | tail -n 1 | tr -d '#')
fi
crashes=$(find "$work/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' \) | wc -l)
found=$(ls "$work/corpus" | wc -l)
if [ -n "${FA_FUZZ_KEEP_CORPUS:-}" ]; then
    mkdir -p "$FA_FUZZ_KEEP_CORPUS" && cp "$work"/corpus/* "$FA_FUZZ_KEEP_CORPUS/"
fi

if [ "$crashes" -gt 0 ] || [ "$rc" -ne 0 ]; then
    mkdir -p "$artifacts"
    cp "$work"/artifacts/* "$log" "$artifacts/" 2>/dev/null || true
    echo "---- end of the fuzzer's log ($log)"
    tail -n 60 "$log"
    echo "fuzz: ${execs:-?} executions in ${seconds} s, $crashes crashes (libFuzzer status $rc);" \
        "inputs and log kept in $artifacts"
    exit 1
fi
grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true
echo "fuzz: ${execs:-?} executions in ${seconds} s, 0 crashes (corpus grew from ${#seeds[@]} seeds to $found inputs)"
