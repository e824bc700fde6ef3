#!/bin/bash
# scripts/test.sh — the whole check, as CI runs it (.ci/run calls this).
#
#   1. deps            scripts/deps.sh test (apt-get as root; otherwise names what is missing and stops)
#   2. configure       build/ (FA_BUILD_DIR): RelWithDebInfo = -O2 -g WITHOUT -DNDEBUG, so assert()s stay on;
#                      -DFLASHATTN_WERROR=ON, tests and fa-bench on
#   3. build           -j$(nproc)
#   4-7. suite         the Criterion suite with OMP_NUM_THREADS=1, 2, 3 and 4
#   8. asan build      build-asan/ (FA_ASAN_BUILD_DIR): -DFLASHATTN_SANITIZE=address,undefined, fa-bench off
#   9. asan suite      the suite once more under ASan+UBSan (OMP_NUM_THREADS=4)
#   10. install        cmake --install build/ into a temporary prefix, then moved elsewhere (relocatable)
#   11. consumer       tests/consumer built and run against that copy through find_package and pkg-config
#
# Each stage prints a banner; the first failing stage stops the run with its name; a summary with the
# time of every stage ends the output. Environment:
#   FA_BUILD_DIR, FA_ASAN_BUILD_DIR   build directories (default build/ and build-asan/ in the repo)
#   FA_JOBS                           parallel build jobs (default: nproc)
#   FA_TEST_THREADS                   OMP_NUM_THREADS values of the sweep (default "1 2 3 4")
#   FA_SKIP_ASAN=1                    skip stages 8-9 (for a quick local run; CI never sets it)
#   FA_TEST_ARGS                      extra arguments for the Criterion runner (e.g. --filter='forward/*')
#   FA_KEEP_TMP=1                     keep the temporary install prefix and consumer builds
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/deps.sh
source "$root/scripts/deps.sh"

build=${FA_BUILD_DIR:-$root/build}
build_asan=${FA_ASAN_BUILD_DIR:-$root/build-asan}
jobs=${FA_JOBS:-$(nproc)}
threads=${FA_TEST_THREADS:-1 2 3 4}
read -r -a test_args <<<"${FA_TEST_ARGS:-}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fa-test.XXXXXX")

# -O2 -g without -DNDEBUG: optimized code (what users run) with the library's assert()s checked.
common_cmake=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g")

now_ms() { date +%s%3N; }
fmt_s() { printf '%d.%ds' $(($1 / 1000)) $(($1 % 1000 / 100)); }
t_start=$(now_ms)
stage_no=0
summary=()

cleanup() {
    if [ "${FA_KEEP_TMP:-0}" = 1 ]; then echo "test.sh: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# stage NAME COMMAND...: runs COMMAND with errexit in force; stops the script if it fails.
stage() {
    local name=$1 t0 rc
    shift
    stage_no=$((stage_no + 1))
    printf '\n==== [%d] %s ====\n' "$stage_no" "$name"
    t0=$(now_ms)
    rm -f "$tmp/stage.note"
    set +e
    (set -e; "$@")
    rc=$?
    set -e
    local dt=$(($(now_ms) - t0)) note=""
    [ -s "$tmp/stage.note" ] && note="  ($(cat "$tmp/stage.note"))"
    if [ $rc -ne 0 ]; then
        summary+=("$(printf '%-40s FAILED (status %d) after %s%s' "$name" "$rc" "$(fmt_s $dt)" "$note")")
        print_summary
        printf '\ntest.sh: FAILED in stage [%d] "%s" (status %d) after %s total\n' "$stage_no" "$name" "$rc" \
            "$(fmt_s $(($(now_ms) - t_start)))"
        exit "$rc"
    fi
    summary+=("$(printf '%-40s ok  %8s%s' "$name" "$(fmt_s $dt)" "$note")")
    printf -- '---- [%d] %s: ok (%s)\n' "$stage_no" "$name" "$(fmt_s $dt)"
}

print_summary() {
    printf '\n==== summary ====\n'
    printf '  %s\n' "${summary[@]}"
}

configure() { # configure DIR EXTRA-CMAKE-ARGS...
    local dir=$1
    shift
    cmake -S "$root" -B "$dir" "${common_cmake[@]}" -DFLASHATTN_WERROR=ON -DFLASHATTN_BUILD_TESTS=ON "$@"
}

# Runs every test of a build: the Criterion runner fa-tests directly (so its own report, ending in
# "Synthesis: Tested: N | Passing: N | Failing: 0 | Crashing: 0", is shown as is), then any other
# test registered with ctest.
suite() { # suite DIR
    local dir=$1 exe
    exe=$(find "$dir" -name fa-tests -type f -perm -u+x -print -quit)
    [ -n "$exe" ] || { echo "no fa-tests executable under $dir" >&2; return 1; }
    echo "OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset} $exe ${test_args[*]}"
    local rc=0
    "$exe" "${test_args[@]}" 2>&1 | tee "$tmp/suite.log" || rc=$?
    # The stage summary repeats Criterion's count.
    grep -o 'Tested: .*' "$tmp/suite.log" | tail -n 1 | sed 's/ *$//' >"$tmp/stage.note" || true
    [ "$rc" -eq 0 ] || return "$rc"
    local others
    others=$(ctest --test-dir "$dir" -N | awk '/Test +#[0-9]+:/ && $3 != "fa-tests" {print $3}')
    if [ -n "$others" ]; then
        ctest --test-dir "$dir" --output-on-failure -E '^fa-tests$'
    fi
}

suite_with_threads() { # suite_with_threads N DIR
    OMP_NUM_THREADS=$1 suite "$2"
}

asan_build() {
    configure "$build_asan" -DFLASHATTN_SANITIZE=address,undefined -DFLASHATTN_BUILD_BENCH=OFF
    cmake --build "$build_asan" -j "$jobs"
}

asan_suite() {
    # detect_leaks: the suite must not leak; halt_on_error/abort: a report fails the test it happens in.
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1} \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        OMP_NUM_THREADS=4 suite "$build_asan"
}

install_relocated() {
    rm -rf "$tmp/stage" "$tmp/prefix"
    cmake --install "$build" --prefix "$tmp/stage"
    # Move it after installing: a package that hard-codes its prefix fails the consumer stage.
    mv "$tmp/stage" "$tmp/prefix"
    (cd "$tmp/prefix" && find . -type f -o -type l | sort)
}

echo "flashattn test.sh: $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?'), $(nproc) CPUs," \
    "builds in $build and $build_asan, -j$jobs"

stage "deps" fa_deps test
stage "configure ($(basename "$build"))" configure "$build" -DFLASHATTN_BUILD_BENCH=ON
stage "build ($(basename "$build"))" cmake --build "$build" -j "$jobs"
for n in $threads; do
    stage "suite OMP_NUM_THREADS=$n" suite_with_threads "$n" "$build"
done
if [ "${FA_SKIP_ASAN:-0}" = 1 ]; then
    summary+=("$(printf '%-40s SKIPPED (FA_SKIP_ASAN=1)' 'asan')")
else
    stage "asan+ubsan build ($(basename "$build_asan"))" asan_build
    stage "asan+ubsan suite" asan_suite
fi
stage "install (relocated prefix)" install_relocated
stage "consumer (find_package + pkg-config)" "$root/tests/consumer/run.sh" "$tmp/prefix" "$tmp/consumer"

print_summary
printf '\ntest.sh: PASSED, %d stages in %s\n' "$stage_no" "$(fmt_s $(($(now_ms) - t_start)))"
