#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/test.sh — the whole check, as CI runs it (.ci/run calls this).
#
#   scripts/test.sh           every stage below (its duration: README.md's quick start)
#   scripts/test.sh --quick   a fast check: deps, format, configure, build and the suite once at
#                             OMP_NUM_THREADS=2 (about a minute); no sanitizers, fuzzing or valgrind
#
#   deps              scripts/deps.sh test (apt-get as root; otherwise names what is missing and stops)
#   format            scripts/format.sh --check: every tracked C file as clang-format writes it (.clang-format),
#                     no line over 110 columns (a second or two)
#   configure, build  build/ (FA_BUILD_DIR): RelWithDebInfo = -O2 -g WITHOUT -DNDEBUG, so assert()s stay on;
#                     -DFLASHATTN_WERROR=ON, tests, fa-bench and fa-tests-shim (for valgrind) on
#   suite             the Criterion suite with OMP_NUM_THREADS=1, 2, 3 and 4 (each suite stage also runs
#                     the other ctest tests: the fuzz seeds, tests/fuzz/corpus, through fa-fuzz-replay)
#   kernel tables     the suite once more per kernel table this CPU has besides the one the library picks
#                     (which the runs above use): FLASHATTN_ISA=ref, avx2, ... at OMP_NUM_THREADS=2; of
#                     avx512, avx512_bf16 and amx (one set of float kernels) all but the first run only
#                     the suites of their bf16 paths and of the tables (suite_on_table_bf16_paths)
#   mpi               the MPI component's driver tests/mpi/fa-mpi-tests under mpirun (scripts/mpirun.sh) on
#                     P = 1, 2, 3 and 4 ranks at OMP_NUM_THREADS=1, and P = 2 at 2, then README.md's MPI
#                     example on 2 ranks; skipped where the component is not built, except in CI
#                     (CI=true), where deps installs MPI
#   bench tools       fa-bench on small shapes of every pass (it checks the oracle and bitwise identical
#                     output across thread counts before reporting), then scripts/node_check.sh (the
#                     thread sweeps, compare_torch.py and the fa-schedule simulator) on tiny shapes
#   hostile runtime   scripts/hostile_runtime.sh (taskset, oversubscription, OMP_PROC_BIND, OMP_THREAD_LIMIT)
#   aarch64           build-arm/ (FA_ARM_BUILD_DIR): scripts/deps.sh aarch64, a cross build with Debian's
#                     gcc-aarch64-linux-gnu (cmake/aarch64-linux-gnu.cmake; -DFLASHATTN_WERROR=ON), its install
#                     and pkg-config file, the instruction budget of the kernels (scripts/aarch64_budget.sh), then
#                     the suites that cover the kernels (arm_kernels, below) as fa-tests-shim under qemu-aarch64 for
#                     ref, neon, sve at 128 to 2048 bits, neon_bf16's and sve_bf16's bf16 paths
#                     (arm_bf16_suites), the table choice at 2048 bits (tests/README.md)
#   asan              build-asan/ (FA_ASAN_BUILD_DIR): -DFLASHATTN_SANITIZE=address,undefined, -g1; the suite
#                     under ASan+UBSan (OMP_NUM_THREADS=4)
#   tsan              build-tsan/ (FA_TSAN_BUILD_DIR): clang, -DFLASHATTN_SANITIZE=thread, LLVM's libomp;
#                     the whole suite as fa-tests-shim (Criterion's runner cannot start under TSan, see
#                     tests/shim/criterion/criterion.h) and the fuzz seeds, with Archer
#                     (OMP_TOOL_LIBRARIES=libarcher.so) giving TSan OpenMP's synchronization; the test
#                     kit's oracles uninstrumented (tests/kit/CMakeLists.txt)
#   fuzz              scripts/fuzz.sh FA_FUZZ_SECONDS (default 60): libFuzzer + ASan + UBSan on the public API
#   valgrind          memcheck (--leak-check=full, definite and indirect leaks are errors) over the fuzz seeds
#                     and over the API suites of fa-tests-shim
#   python            the Python package (src/python, pyproject.toml): one wheel built by pip from this
#                     checkout (pip's build isolation, scikit-build-core, the library's own CMake), installed
#                     into a fresh virtual environment without PyTorch (import flashattn must work there) and
#                     into the suite's environment, FA_PY_VENV (default ~/.cache/flashattn-venv, created with
#                     tests/python/requirements.txt on first use and reused: PyTorch is about 5 GB); then
#                     pytest tests/python (tests/README.md, "Python")
#   install           cmake --install build/ into a temporary prefix, then moved elsewhere (relocatable)
#   consumer          tests/consumer built and run against that copy through find_package and pkg-config
#   abi               tests/abi/run.sh: the library built again against a header whose size-tagged structs
#                     have one more field each (build-abi/, FA_ABI_BUILD_DIR); programs compiled against
#                     the frozen 0.4.0 header, against the grown one and a ctypes mirror run on both
#                     libraries: the same bytes, unknown fields refused by exactly their calls
#
# Each stage prints a banner; the first failing stage stops the run with its name; a summary with the
# time of every stage (and its figures: tests passed, fuzz executions, valgrind errors) ends the output.
# Environment:
#   FA_BUILD_DIR, FA_ASAN_BUILD_DIR, FA_TSAN_BUILD_DIR, FA_FUZZ_BUILD_DIR, FA_ABI_BUILD_DIR,
#   FA_ARM_BUILD_DIR                  build directories
#   FA_JOBS                           parallel build jobs (default: nproc)
#   FA_TEST_THREADS                   OMP_NUM_THREADS values of the sweep (default "1 2 3 4")
#   FA_TEST_HEAVY=1                   the heavier variants: fuzzing for FA_FUZZ_SECONDS (default then 3600)
#                                     and valgrind over the whole suite instead of the API suites
#   FA_FUZZ_SECONDS                   seconds of fuzzing (default 60, or 3600 with FA_TEST_HEAVY=1)
#   FA_SKIP_ASAN=1, FA_SKIP_TSAN=1, FA_SKIP_FUZZ=1, FA_SKIP_VALGRIND=1, FA_SKIP_PYTHON=1,
#   FA_SKIP_ARM=1
#                                     skip those stages (for a quick local run; CI never sets them)
#   FA_PY_VENV                        the Python suite's virtual environment (default ~/.cache/flashattn-venv)
#   FA_PYTHON                         the interpreter that creates the environments (default python3)
#   FA_TEST_ARGS                      extra arguments for the test runners (e.g. --filter='forward/*')
#   FA_KEEP_TMP=1                     keep the temporary install prefix, consumer builds and valgrind logs
set -euo pipefail

quick=0
case "${1:-}" in
--quick) quick=1 ;;
"") ;;
*) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/deps.sh
source "$root/scripts/deps.sh"

build=${FA_BUILD_DIR:-$root/build}
build_asan=${FA_ASAN_BUILD_DIR:-$root/build-asan}
build_tsan=${FA_TSAN_BUILD_DIR:-$root/build-tsan}
build_arm=${FA_ARM_BUILD_DIR:-$root/build-arm}
build_abi=${FA_ABI_BUILD_DIR:-$root/build-abi}
jobs=${FA_JOBS:-$(nproc)}
threads=${FA_TEST_THREADS:-1 2 3 4}
heavy=${FA_TEST_HEAVY:-0}
if [ "$heavy" = 1 ]; then fuzz_seconds=${FA_FUZZ_SECONDS:-3600}; else fuzz_seconds=${FA_FUZZ_SECONDS:-60}; fi
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

skipped() { # skipped NAME WHY
    summary+=("$(printf '%-40s SKIPPED (%s)' "$1" "$2")")
}

# The plain closing line, summed over every suite run (each test counted once per run).
print_totals() {
    awk '{p += $1; f += $2} END {printf "tests: %d passed, %d failed\n", p, f}' "$tmp/totals"
}

print_summary() {
    printf '\n==== summary ====\n'
    printf '  %s\n' "${summary[@]}"
}

# The benchmark tools end to end, on shapes small enough for seconds: fa-bench refuses to report a
# speed unless every thread count matches the float64 oracle and gives bitwise identical output, so
# each run is a check of the library as the benchmarks see it (every pass, GQA, a causal mask, a
# decode step with split-KV, the BLAS baseline's own check where OpenBLAS is built in, peaky inputs
# whose probabilities are mostly subnormal or zero, with their rows written to CSV; every score
# modifier at once, forward and backward, and the modifiers preset against its references; half and
# quantized KV caches, contiguous and paged, and MLA's latent cache shared by k and v); then the
# scripts users run on a node: scripts/node_check.sh, which drives thread_sweep.sh for both passes
# and compare_torch.py (which says so and exits 0 where PyTorch is missing).
bench_tools() {
    local bench out=$tmp/bench-tools
    bench=$(find "$build" -name fa-bench -type f -perm -u+x -print -quit)
    [ -n "$bench" ] || { echo "no fa-bench under $build" >&2; return 1; }
    mkdir -p "$out"
    "$bench" --pass fwdbwd --b 2 --h 4 --hkv 2 --nq 77 --nk 90 --d 24 --dv 40 --causal bottom-right \
        --threads 1,2,3 --reps 1 --probe-time 0.01
    "$bench" --preset decode --nk 4096 --threads 1,2 --reps 1 --probe-time 0.01 --blas-reps 1
    "$bench" --pass fwdbwd --h 2 --nq 96 --d 32 --dist peaky --threads 1,2 --reps 1 --probe-time 0.01 \
        --csv "$out/peaky.csv"
    # The rows say which inputs and which machine and build they measured.
    head -n 1 "$out/peaky.csv" | grep -q ',dist,.*,host,cpu_model,.*,git_revision,run_utc,'
    # ... and whether a busy machine disturbed them (the tables say so in words; never a failure here)
    head -n 1 "$out/peaky.csv" | grep -q ',probe_spread,disturbed'
    test "$(grep -c ',peaky,' "$out/peaky.csv")" = 2
    # Every score modifier at once, checked against the float64 oracle (dsinks too) before timing:
    # the broadcast key-padding bias forward, the full bias forward and backward.
    local mods=(--b 2 --h 4 --hkv 2 --nq 77 --nk 90 --d 24 --dv 40 --causal bottom-right --window 20,3
        --softcap 5 --alibi --sinks --threads 1,2 --reps 1 --probe-time 0.01)
    "$bench" "${mods[@]}" --bias keypad
    "$bench" "${mods[@]}" --bias full --pass fwdbwd --csv "$out/mods.csv"
    head -n 1 "$out/mods.csv" | grep -q ',window_left,window_right,softcap,alibi,bias,sinks,visible_pairs,'
    test "$(grep -c ',20,3,5,true,full,true,' "$out/mods.csv")" = 2
    # Half precision: all-bf16 with sinks, and f32 queries over an f16 KV cache, forward and backward,
    # each checked against the float64 oracle and across thread counts before timing.
    "$bench" --dtype bf16 --pass fwdbwd --b 2 --h 4 --hkv 2 --nq 77 --nk 90 --d 24 --dv 40 \
        --causal bottom-right --sinks --threads 1,2 --reps 1 --probe-time 0.01
    "$bench" --kv-dtype f16 --pass fwdbwd --nq 64 --h 2 --threads 1,2 --reps 1 --probe-time 0.01
    # A preset's cases against their reference, in interleaved rounds of one run: the closing
    # summary compares them.
    "$bench" --preset modifiers --nq 64 --h 2 --threads 1,2 --reps 1 --rounds 2 --probe-time 0.01 \
        >"$out/modifiers.txt"
    grep -q '^  case 10 vs case 6 ' "$out/modifiers.txt"
    # ... with each ratio's range within one round over the rounds, lowest first
    grep '^  case 10 vs case 6 ' "$out/modifiers.txt" | grep -o '(rounds [0-9.]*-[0-9.]*%)' |
        awk -F'[ %-]' '$2 + 0 <= $3 + 0 { ok++ } END { exit ok == 2 ? 0 : 1 }'
    # Ragged batches (fa_seqs): packed prompts against a dense call over equal lengths and a call per
    # sequence (the loop's rows equal to the packed ones), a decode step over a contiguous and a
    # shuffled paged cache (bitwise equal); every call checked against the oracle before timing.
    "$bench" --varlen 5:1-200 --causal top-left --h 4 --hkv 2 --d 24 --threads 1,2 --reps 1 \
        --probe-time 0.01 --csv "$out/varlen.csv"
    test "$(grep -c ',varlen,5,1,200,' "$out/varlen.csv")" = 2
    "$bench" --decode-batch 6:1-900 --page-size 7 --h 4 --hkv 2 --d 24 --dv 40 --threads 1,2 --reps 1 \
        --probe-time 0.01 --csv "$out/decode.csv"
    test "$(grep -c ',decode,6,1,900,' "$out/decode.csv")" = 2
    # ... each paged row with the page probe (the paged call's bytes read where they lie), which
    # fa-bench takes only when its list of the pages holds exactly the bytes the call reads
    head -n 1 "$out/decode.csv" | grep -q ',huge_pages,page_read_gbps,pct_page_read_bw,pct_of_reference_round_lo,'
    test "$(grep -c ',decode,6,1,900,.*,[0-9.e+]*[0-9],[0-9.e+]*[0-9],,$' "$out/decode.csv")" = 2
    # ... and over a bf16 paged cache (f32 queries): paged bitwise the contiguous cache, oracle-checked
    "$bench" --decode-batch 6:1-900 --page-size 7 --h 4 --hkv 2 --d 24 --dv 40 --kv-dtype bf16 --threads 1,2 \
        --reps 1 --probe-time 0.01 --csv "$out/decode-bf16.csv"
    test "$(grep -c ',decode,6,1,900,' "$out/decode-bf16.csv")" = 2
    # ... and over int8 and both FP8 caches with f32 scales per token and head (issue 24), the paged
    # ones' scales a pool read through the same block table: checked against the float64 oracle on
    # scale * code, the paged rows bitwise the contiguous ones, bitwise across thread counts
    local t
    for t in i8 f8e4m3 f8e5m2; do
        "$bench" --decode-batch 6:1-900 --page-size 7 --h 4 --hkv 2 --d 24 --dv 40 --kv-dtype "$t" \
            --threads 1,2 --reps 1 --probe-time 0.01 --csv "$out/decode-$t.csv"
        test "$(grep -c ",decode,6,1,900,.*,$t,[^,]*,[^,]*,token-head,false," "$out/decode-$t.csv")" = 2
    done
    # ... and with each scale right after its row's codes (the scale views aliasing the caches)
    "$bench" --decode-batch 6:1-900 --page-size 7 --h 4 --hkv 2 --d 26 --dv 40 --kv-dtype i8 --kv-scales inline \
        --threads 1,2 --reps 1 --probe-time 0.01 --csv "$out/decode-inline.csv"
    test "$(grep -c ',decode,6,1,900,.*,i8,[^,]*,[^,]*,token-head-inline,false,' "$out/decode-inline.csv")" = 2
    # DeepSeek's MLA shapes at head dims the library takes: v a view of k's memory, an fp8 latent cache
    "$bench" --preset mla --d 96 --dv 64 --h 8 --nq 4 --nk 300 --kv-dtype f8e4m3 --threads 1,2 --reps 1 \
        --probe-time 0.01
    FA_BENCH=$bench FA_RESULTS_DIR=$out FA_SCHEDULE_ARGS="--no-calibrate" \
        "$root/scripts/node_check.sh" --threads 1,2 --nq 64 --reps 1 --probe-time 0.01
    test -s "$out/sweep.csv" && test -s "$out/fwdbwd/sweep.csv" && test -s "$out/torch.txt"
    # the schedule simulator ran once there: a prediction for every planned shape at 256 threads
    test "$(grep -c '"threads": 256, "predicted_efficiency"' "$out/schedule.json")" = 6
    test -s "$out/node_check.md"
    # the kernels without the driver (bench/kernels/): runs, and reports every kernel at both head dims
    local kernels
    kernels=$(find "$build" -name fa-kernel-bench -type f -perm -u+x -print -quit)
    [ -n "$kernels" ] || { echo "no fa-kernel-bench under $build" >&2; return 1; }
    "$kernels" --d 24,40 --keys 256 --rounds 2 | tee "$out/kernels.txt"
    test "$(grep -c 'all three' "$out/kernels.txt")" = 2
    # and a decode step's, every cache type
    "$kernels" --decode --d 24 --rounds 2 | tee "$out/kernels_decode.txt"
    test "$(grep -cE '^  (f32|bf16|f16|int8|e4m3|e5m2) ' "$out/kernels_decode.txt")" = 6
    # and a grouped-query decode's (four query rows a kv head), called on runs of 5 keys (a shorter last)
    "$kernels" --decode --decode-rows 4 --decode-run 5 --d 24 --rounds 2 | tee "$out/kernels_decode_rows.txt"
    test "$(grep -cE '^  (f32|bf16|f16|int8|e4m3|e5m2) ' "$out/kernels_decode_rows.txt")" = 6
}

configure() { # configure DIR EXTRA-CMAKE-ARGS...
    local dir=$1
    shift
    cmake -S "$root" -B "$dir" "${common_cmake[@]}" -DFLASHATTN_WERROR=ON -DFLASHATTN_BUILD_TESTS=ON "$@"
}

# Runs a test runner (fa-tests, or fa-tests-shim with the same options and the same last line,
# "Synthesis: Tested: N | Passing: N | Failing: 0 | Crashing: 0"), shown as is; the stage summary
# repeats that count.
run_tests() { # run_tests EXE ARGS...
    local exe=$1 rc=0
    shift
    echo "OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}${FLASHATTN_ISA:+ FLASHATTN_ISA=$FLASHATTN_ISA} $exe $*"
    "$exe" "$@" 2>&1 | tee "$tmp/suite.log" || rc=$?
    grep -o 'Tested: .*' "$tmp/suite.log" | tail -n 1 | sed 's/ *$//' >"$tmp/stage.note" || true
    # every run's passed and failed counts, for the plain closing line
    grep -o 'Passing: [0-9]* | Failing: [0-9]*' "$tmp/suite.log" | tail -n 1 |
        awk '{print $2, $5}' >>"$tmp/totals" || true
    return "$rc"
}

# Runs every test of a build: the Criterion runner fa-tests, then any other test registered with ctest.
suite() { # suite DIR
    local dir=$1 exe
    exe=$(find "$dir" -name fa-tests -type f -perm -u+x -print -quit)
    [ -n "$exe" ] || { echo "no fa-tests executable under $dir" >&2; return 1; }
    run_tests "$exe" "${test_args[@]}"
    local others
    others=$(ctest --test-dir "$dir" -N | awk '/Test +#[0-9]+:/ && $3 != "fa-tests" {print $3}')
    if [ -n "$others" ]; then
        ctest --test-dir "$dir" --output-on-failure -E '^fa-tests$'
    fi
}

suite_with_threads() { # suite_with_threads N DIR
    OMP_NUM_THREADS=$1 suite "$2"
}

# The kernel tables this CPU runs, and the one the library picks by itself (the last of ref, avx2,
# avx512, avx512_bf16, amx it runs, avx512_bf16 only on an AMD Zen 4 or Zen 5: CPU family 25 or 26;
# elsewhere it is taken only by name). Each table's CPU features as
# /proc/cpuinfo names them (src/kernels/*/table.c, .requires).
table_flags() {
    case $1 in
    avx2) echo "avx2 fma f16c" ;;
    avx512) echo "avx512f avx512dq avx512bw" ;;
    avx512_bf16) echo "avx512f avx512dq avx512bw avx512vl avx512_bf16" ;;
    amx) echo "avx512f avx512dq avx512bw avx512vl avx512_bf16 amx_tile amx_bf16" ;;
    esac
}

table_runs_here() { # table_runs_here TABLE: every flag it needs is in /proc/cpuinfo
    local f
    for f in $(table_flags "$1"); do grep -qw "$f" /proc/cpuinfo 2>/dev/null || return 1; done
    # amx also needs Linux's permission to use the tiles, which only a process can ask for: a tiny
    # fa-bench run on the table says whether the library got it
    [ "$1" != amx ] || FLASHATTN_ISA=amx "$build/bench/fa-bench" --nq 16 --h 1 --d 16 --threads 1 --reps 1 \
        --warmup 0 --probe-time 0 >/dev/null 2>&1
}

cpu_tables() {
    local t="ref" x
    for x in avx2 avx512 avx512_bf16 amx; do table_runs_here "$x" && t="$t $x"; done
    echo "$t"
}

amd_zen4_or_zen5() {
    grep -q '^vendor_id[[:space:]]*: AuthenticAMD$' /proc/cpuinfo 2>/dev/null &&
        grep -Eq '^cpu family[[:space:]]*: (25|26)$' /proc/cpuinfo 2>/dev/null
}

default_table() {
    local t="ref" x
    for x in avx2 avx512 avx512_bf16 amx; do
        [ "$x" != avx512_bf16 ] || amd_zen4_or_zen5 || continue
        table_runs_here "$x" && t=$x
    done
    echo "$t"
}

# Says plainly which tables the suite runs on and which this CPU cannot run (and for want of what).
report_tables() {
    local x f missing
    echo "kernel tables run on this CPU: $(cpu_tables)"
    for x in avx2 avx512 avx512_bf16 amx; do
        table_runs_here "$x" && continue
        missing=""
        for f in $(table_flags "$x"); do grep -qw "$f" /proc/cpuinfo 2>/dev/null || missing="$missing $f"; done
        echo "kernel table NOT run (this CPU lacks:$missing): $x"
    done
}

suite_on_table() { # suite_on_table TABLE DIR
    FLASHATTN_ISA=$1 OMP_NUM_THREADS=2 suite "$2"
}

# avx512, avx512_bf16 and amx share one set of float kernels (src/kernels/*/table.c point their f32
# and f64 halves at avx512's) and differ in how bf16 runs: the first of them the runs take covers
# the float kernels, and the others run only the suites that reach their bf16 and half paths, the
# kernel-table suites and the table choice (the suite's other tests would run the same code again).
suite_on_table_bf16_paths() { # suite_on_table_bf16_paths TABLE DIR (in the stage's subshell)
    test_args+=("--filter=@(half_*|kernel_*|runtime|block_sizes)/*")
    suite_on_table "$1" "$2"
}

# The MPI test driver on P = 1..4 ranks of this machine (scripts/mpirun.sh: --oversubscribe, as root
# --allow-run-as-root, shared memory without CMA; its header says why), one thread per rank, and
# P = 2 once more at 2 threads per rank. A rank stuck in a collective must fail the stage, not hang
# CI: every run is under timeout (TERM, then KILL 10 s later). With more ranks than cores, threads
# that spin while they wait (OpenMP's default) take the cores from the ranks doing the work: passive
# waiting took P = 4 from over 100 s to 4 s on 2 cores.
mpi_tests() {
    local exe=$build/tests/mpi/fa-mpi-tests run np nt t0 times="" # the note: each passed run's time
    [ -x "$exe" ] || { echo "libflashattn_mpi is built but $exe is not (tests/mpi/)" >&2; return 1; }
    for run in 1:1 2:1 3:1 4:1 2:2; do
        np=${run%:*} nt=${run#*:}
        echo "OMP_NUM_THREADS=$nt scripts/mpirun.sh $np $exe"
        t0=$(now_ms)
        OMP_NUM_THREADS=$nt OMP_WAIT_POLICY=passive timeout -k 10 300 "$root/scripts/mpirun.sh" "$np" "$exe"
        times="$times${times:+, }P=$np x $nt thr $(fmt_s $(($(now_ms) - t0)))"
        echo "$times" >"$tmp/stage.note"
    done
    # README.md's MPI example (tests/mpi/example_ring.c) as its mpirun line runs it
    local example=$build/tests/mpi/fa-mpi-example-ring
    [ -x "$example" ] || { echo "libflashattn_mpi is built but $example is not (tests/mpi/)" >&2; return 1; }
    echo "OMP_NUM_THREADS=1 scripts/mpirun.sh 2 $example"
    OMP_NUM_THREADS=1 timeout -k 10 120 "$root/scripts/mpirun.sh" 2 "$example"
    # fa-bench-mpi's own checks on 2 ranks (MPI outputs against one process, bitwise after timing)
    local bench=$build/bench/mpi/fa-bench-mpi
    [ -x "$bench" ] || { echo "libflashattn_mpi is built but $bench is not (bench/mpi/)" >&2; return 1; }
    echo "scripts/mpirun.sh 2 $bench --n 1024 --h 2 --d 64 --reps 1 --rounds 1"
    t0=$(now_ms)
    OMP_WAIT_POLICY=passive timeout -k 10 120 "$root/scripts/mpirun.sh" 2 "$bench" --n 1024 --h 2 --d 64 --reps 1 \
        --rounds 1 >/dev/null
    echo "$times, fa-bench-mpi P=2 $(fmt_s $(($(now_ms) - t0)))" >"$tmp/stage.note"
}

# CI installs MPI (deps.sh test), so a build without the MPI component there is a failure.
mpi_missing() {
    echo "CI=true but $build has no libflashattn_mpi: MPI was not found at configure (scripts/deps.sh test" \
        "installs openmpi-bin and libopenmpi-dev) or FLASHATTN_MPI=OFF" >&2
    return 1
}

hostile_runtime() {
    FA_BUILD_DIR=$build "$root/scripts/hostile_runtime.sh" "$build/tests/fa-tests"
}

asan_build() {
    # -g1: line tables only, all that a report's symbolized stack needs; full -g made GCC's variable
    # tracking over the instrumented SIMD tables a third of this build (Zen 3: 300 -> 216 s)
    configure "$build_asan" -DFLASHATTN_SANITIZE=address,undefined -DFLASHATTN_BUILD_BENCH=OFF \
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1"
    cmake --build "$build_asan" -j "$jobs"
}

asan_suite() {
    # detect_leaks: the suite must not leak; halt_on_error/abort: a report fails the test it happens in.
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1} \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        OMP_NUM_THREADS=4 suite "$build_asan"
}

# ThreadSanitizer needs every access to shared data instrumented: clang builds the library and the
# tests, and clang's -fopenmp links LLVM's libomp, whose OMPT interface lets Archer (libarcher.so)
# tell TSan about OpenMP's barriers, tasks and reductions. libgomp has no such interface.
tsan_build() {
    configure "$build_tsan" -DCMAKE_C_COMPILER=clang -DFLASHATTN_SANITIZE=thread -DFLASHATTN_BUILD_TESTS=OFF \
        -DFLASHATTN_TEST_SHIM=ON -DFLASHATTN_BUILD_BENCH=OFF
    cmake --build "$build_tsan" -j "$jobs" --target fa-tests-shim fa-fuzz-replay
}

# libarcher.so of the clang in use (libomp-dev), e.g. /usr/lib/llvm-14/lib/libarcher.so.
archer_library() {
    local dir
    dir=$(clang -print-resource-dir 2>/dev/null)/../..
    if [ -f "$dir/libarcher.so" ]; then
        echo "$(cd "$dir" && pwd)/libarcher.so"
    else
        find /usr/lib/llvm-*/lib -maxdepth 1 -name libarcher.so 2>/dev/null | sort -V | tail -n 1
    fi
}

tsan_suite() {
    local archer
    archer=$(archer_library)
    [ -n "$archer" ] || { echo "libarcher.so not found (package libomp-dev)" >&2; return 1; }
    # halt_on_error: the first report fails its test; ignore_noninstrumented_modules: accesses made
    # inside libraries built without TSan (libomp itself, hwloc, libc) are not reported. No
    # suppressions: none of the reports that remain is a third-party library's.
    export OMP_TOOL_LIBRARIES=$archer
    export TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1 ${TSAN_OPTIONS:-}"
    echo "OMP_TOOL_LIBRARIES=$OMP_TOOL_LIBRARIES TSAN_OPTIONS=$TSAN_OPTIONS"
    # TSan of LLVM 14 expects the address layout of kernels with at most 28 bits of mmap randomness;
    # with more (vm.mmap_rnd_bits = 32 on recent kernels) it stops with "unexpected memory mapping".
    # Without randomization (setarch -R, an unprivileged personality flag) it runs on any kernel.
    local norand=()
    if setarch "$(uname -m)" -R true 2>/dev/null; then norand=(setarch "$(uname -m)" -R); fi
    # TSan runs the suite 2-10x slower: its timeouts stretch accordingly.
    OMP_NUM_THREADS=2 FA_SHIM_TIMEOUT_SCALE=10 run_tests "${norand[@]}" "$build_tsan/tests/shim/fa-tests-shim" \
        --jobs=2 "${test_args[@]}"
    local note reports
    note=$(cat "$tmp/stage.note")
    reports=$(grep -c 'WARNING: ThreadSanitizer' "$tmp/suite.log" || true)
    OMP_NUM_THREADS=2 "${norand[@]}" "$build_tsan/tests/fuzz/fa-fuzz-replay" "$root/tests/fuzz/corpus" 2>&1 |
        tee "$tmp/replay.log"
    reports=$((reports + $(grep -c 'WARNING: ThreadSanitizer' "$tmp/replay.log" || true)))
    echo "$note; fuzz seeds replayed; $reports TSan reports" >"$tmp/stage.note"
}

fuzz() {
    FA_FUZZ_BUILD_DIR=${FA_FUZZ_BUILD_DIR:-$root/build-fuzz} FA_JOBS=$jobs "$root/scripts/fuzz.sh" "$fuzz_seconds" \
        2>&1 | tee "$tmp/fuzz.log"
    sed -n 's/^fuzz: \([0-9?]* executions\) in \([0-9]* s\), \([0-9]* crashes\).*/\1 in \2, \3/p' "$tmp/fuzz.log" |
        tail -n 1 >"$tmp/stage.note"
}

# The suites of fa-tests-shim that valgrind runs in CI: every public call with good and bad
# arguments, contexts, threads and merges (alloc's forward tests: its backward ones run training
# steps, minutes under valgrind). Not the numeric grids (minutes under valgrind either), and not
# placement: it loads synthetic topologies (HWLOC_SYNTHETIC), whose parsing in hwloc 2.9 copies
# between overlapping buffers (valgrind reports it inside libhwloc), and under valgrind a binding to
# CPUs the machine lacks is not refused; the suite stages and ASan/TSan run it.
valgrind_suites='@(@(bad_input|accepted_edges|error_exit|misc|runtime|merge|struct_size)/*|alloc/!(*backward*))'
# With FA_TEST_HEAVY=1, all but three suites (placement, above, and): large_offsets reserves
# tens of GiB of address space with mmap(MAP_NORESERVE), more than valgrind lets a process map;
# stress runs 16 threads x 50 rounds, which valgrind (one thread at a time) cannot finish within
# the test's own 300 s watchdog. TSan and the hostile-runtime stage cover stress.
valgrind_suites_heavy='!(large_offsets|stress|placement)/*'

valgrind_memcheck() {
    local logs=$tmp/valgrind rc=0 filter=$valgrind_suites
    [ "$heavy" = 1 ] && filter=$valgrind_suites_heavy
    rm -rf "$logs"
    mkdir -p "$logs"
    # One log per process (each test runs in a forked child); a child with an error, or with a
    # definitely or indirectly lost block, exits 1, which fails its test.
    local vg=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect
        --show-leak-kinds=definite,indirect --log-file="$logs/%p.log")
    # hwloc's x86 backend reads CPUID, which valgrind emulates; it declines to run there and says so
    # on stderr at every topology load (which misc/ checks is empty). The Linux backend remains.
    export HWLOC_COMPONENTS=-x86
    echo "valgrind: fa-fuzz-replay tests/fuzz/corpus"
    OMP_NUM_THREADS=2 "${vg[@]}" "$build/tests/fuzz/fa-fuzz-replay" "$root/tests/fuzz/corpus" || rc=1
    echo "valgrind: fa-tests-shim --filter='$filter'"
    OMP_NUM_THREADS=2 FA_SHIM_TIMEOUT_SCALE=50 "${vg[@]}" "$build/tests/shim/fa-tests-shim" --jobs=2 \
        --filter="$filter" "${test_args[@]}" 2>&1 | tee "$tmp/suite.log" || rc=1
    local tested
    tested=$(grep -o 'Tested: [0-9]* | Passing: [0-9]*' "$tmp/suite.log" | tail -n 1)
    # Sums over every process's log. "possibly lost" are libgomp's thread stacks and TLS, which
    # the OpenMP runtime keeps until exit; they are reported, not errors.
    awk -v tested="$tested" '
        { gsub(",", "", $4) }
        /ERROR SUMMARY:/ { n++; errors += $4 }
        /definitely lost:/ { definite += $4 }
        /indirectly lost:/ { indirect += $4 }
        /possibly lost:/ { possibly += $4 }
        END {
            printf "%d processes, %d errors, definitely lost %d B, indirectly lost %d B, possibly lost %d B; %s\n",
                n, errors, definite, indirect, possibly, tested
        }' "$logs"/*.log | tee "$tmp/stage.note"
    if [ "$rc" -ne 0 ]; then
        echo "---- valgrind logs with errors:"
        grep -L 'ERROR SUMMARY: 0 errors' "$logs"/*.log | xargs -r cat
    fi
    return "$rc"
}

# The Python package. One wheel, built the way `pip install .` builds it (build isolation: pip fetches
# scikit-build-core, which runs the library's own CMake in build-python/), goes into a fresh virtual
# environment without PyTorch, where `import flashattn` must work and load the library it ships, and
# into the suite's environment, kept outside the clone and reused between runs: it is created, and
# tests/python/requirements.txt installed (PyTorch's wheel with its CUDA libraries, about 5 GB), only
# when missing or when the requirements file changed (its copy in the environment says which it has).
python_package() {
    local venv=${FA_PY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/flashattn-venv} py=${FA_PYTHON:-python3}
    local req=$root/tests/python/requirements.txt wheels=$tmp/wheels t0
    if ! "$venv/bin/python" -c 'import sys' 2>/dev/null; then
        echo "python: creating $venv ($("$py" --version 2>&1))"
        rm -rf "$venv"
        "$py" -m venv "$venv"
    fi
    if ! cmp -s "$req" "$venv/fa-requirements.txt"; then
        echo "python: installing $req into $venv"
        t0=$(now_ms)
        "$venv/bin/python" -m pip install --no-cache-dir --disable-pip-version-check -r "$req"
        cp "$req" "$venv/fa-requirements.txt"
        echo "python: requirements installed in $(fmt_s $(($(now_ms) - t0)))"
    fi
    rm -rf "$wheels" "$tmp/bare"
    CMAKE_BUILD_PARALLEL_LEVEL=$jobs "$venv/bin/python" -m pip wheel --no-deps --disable-pip-version-check \
        -w "$wheels" "$root"
    "$py" -m venv "$tmp/bare"
    "$tmp/bare/bin/python" -m pip install --disable-pip-version-check -q "$wheels"/flashattn-*.whl
    (cd "$tmp" && "$tmp/bare/bin/python" -c 'import sys, flashattn
assert "torch" not in sys.modules
print("import flashattn without torch:", flashattn.library_version(), flashattn.__file__)')
    "$venv/bin/python" -m pip install --disable-pip-version-check -q --force-reinstall --no-deps \
        "$wheels"/flashattn-*.whl
    "$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'
    local rc=0
    (cd "$tmp" && "$venv/bin/python" -m pytest -p no:cacheprovider -q "$root/tests/python") 2>&1 |
        tee "$tmp/pytest.log" || rc=$?
    local passed failed
    passed=$(grep -oE '[0-9]+ passed' "$tmp/pytest.log" | tail -n 1 | grep -oE '[0-9]+' || echo 0)
    failed=$(grep -oE '[0-9]+ failed' "$tmp/pytest.log" | tail -n 1 | grep -oE '[0-9]+' || echo 0)
    echo "$passed $failed" >>"$tmp/totals"
    echo "pytest: $passed passed, $failed failed" >"$tmp/stage.note"
    return "$rc"
}

# ---- aarch64, cross-compiled and emulated ----
# The suites that reach every kernel of a table (tests/README.md, "aarch64 under emulation", says
# which do not run and why): each table against ref and the oracle at every tile residue forward and
# backward, its exp2 and subnormal flush, tanh bound, pack, widen of every stored type and scale and
# modifiers (white-box), the decode products over stored rows (kernel_stored: bf16, f16, int8, FP8
# read in place through row lists), the edge tiles' products over the rows that see a key
# (edge_tiles: scores_rows and the drivers' runs of it), the half-precision equivalence; and one bitwise
# thread-invariance suite per table (forward, fixed odd blocks, backward, half precision: they check
# the drivers over the kernels, which the others check alone), neon also the quantized caches end to
# end. FA_TEST_SIMD restricts the white-box suites to the table under test (neon would otherwise run
# again beside sve at every length, and ref in every run).
arm_kernels='kernel_tables/*|kernel_traits/*|kernel_stored/*|edge_tiles/*|pack/*|exp2/*|tanh/*|half_equivalence/*'
arm_forward_invariance='invariance/out_and_lse_bitwise_equal_across_thread_counts_and_bindings'
arm_backward_invariance='invariance/gradients_*|invariance/twenty_*'
arm_odd_blocks_invariance='invariance/out_and_lse_*_with_fixed_odd_blocks'
# ref: against the oracle, its exp2 flush, forward invariance, the half-precision equivalence, the
# one-byte types' scalar conversions (quant.h: ref's widen and every table's tails) on aarch64
arm_ref_suites="@(kernel_tables/*edge_residue|exp2/every_tables_*|$arm_forward_invariance|half_equivalence/*|quant/*)"
# at 1024 and 2048 bits (512-bit vectors in the longer registers: kernels/sve/sve_vocab.h) the float
# kernels against ref at every residue, their pack and exp2; at 2048 the automatic choice too
# (sve_bf16: qemu's max has BF16) and its bf16 set against the scalar oracle
arm_wide_suites='kernel_traits/*|kernel_tables/*@(each_table|edge_residue)*|pack/*|exp2/*'
# neon_bf16 (neon's float kernels, checked by the neon run): its bf16 set against the scalar oracle at
# every residue, and the all-bf16 calls on it against the oracle, bitwise across thread counts, NaN
# and rounding (the other half suites reach only the widening drivers the neon run covers)
arm_bf16_suites='@(kernel_pairs/*|half_equivalence/*|half_rounding/bf16_*|half_invariance/bf16_*)'

arm_build() {
    fa_deps aarch64
    cmake -S "$root" -B "$build_arm" "${common_cmake[@]}" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
        -DFLASHATTN_WERROR=ON -DFLASHATTN_BUILD_TESTS=OFF -DFLASHATTN_TEST_SHIM=ON -DFLASHATTN_BUILD_BENCH=OFF \
        -DFLASHATTN_MPI=OFF
    cmake --build "$build_arm" -j "$jobs" --target flashattn flashattn_static fa-tests-shim
    # the same install as on x86: the libraries are aarch64's, the pkg-config file names them
    rm -rf "$tmp/arm-prefix"
    cmake --install "$build_arm" --prefix "$tmp/arm-prefix" >/dev/null
    local lib pc
    lib=$(find "$tmp/arm-prefix" -name libflashattn.so -print -quit)
    pc=$(find "$tmp/arm-prefix" -name flashattn.pc -print -quit)
    aarch64-linux-gnu-readelf -h "$lib" | grep -q 'Machine: *AArch64'
    PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --libs flashattn | grep -q -- '-lflashattn'
    echo "installed: $lib (AArch64), $pc"
    # the instruction budget (src/README.md, "aarch64"), from the object code of each table's half
    local o=$build_arm/CMakeFiles/flashattn_objects.dir/src/kernels f fn
    for f in neon/neon_f32 sve/sve_f32_128 sve/sve_f32_256 sve/sve_f32_512; do
        fn=$(aarch64-linux-gnu-nm "$o/$f.c.o" | grep -o 'rows_block_6_4_0_0_f32[.a-z0-9]*' | head -n 1)
        "$root/scripts/aarch64_budget.sh" "$o/$f.c.o" scores_block_6_4_f32 online_softmax_lines_all_f32 "$fn" | sed "s|^|$f: |"
    done
    # neon_bf16's set: the BFDOT dot (its first loop: the 4 × 4 block over 8 k) and the softmax
    # writing P in pairs
    "$root/scripts/aarch64_budget.sh" "$o/neon/neon_bf16_dot.c.o" fa_neon_bf16_dot | sed "s|^|neon/neon_bf16_dot: |"
    "$root/scripts/aarch64_budget.sh" "$o/neon/neon_bf16_softmax.c.o" fa_neon_bf16_online_softmax_pairs |
        sed "s|^|neon/neon_bf16_softmax: |"
    # sve_bf16's at 128 and 512 bits: the SVE BFDOT dot (the 4 × 4 block over 8 k; its other loops
    # are the edge blocks) and the softmax writing P by BFCVT and BFCVTNT
    for f in 128 512; do
        "$root/scripts/aarch64_budget.sh" "$o/sve/sve_bf16_$f.c.o" "fa_sve${f}_bf16_dot" | grep ' 64 BFDOT' |
            sed "s|^|sve/sve_bf16_$f: |"
        "$root/scripts/aarch64_budget.sh" "$o/sve/sve_bf16_$f.c.o" "fa_sve${f}_bf16_online_softmax_pairs" |
            sed "s|^|sve/sve_bf16_$f: |"
    done
}

# arm_run NAME QEMU-CPU FILTER [VAR=VALUE...]: fa-tests-shim under qemu-aarch64 with that CPU, in the
# background once fewer than $jobs runs are under way; its output in $tmp/arm-NAME.log, its seconds in
# $tmp/arm-NAME.ms. A run's tests go one at a time (--jobs=1): the runs side by side keep the cores
# busy, where one run's two workers left them a third idle, waiting on its longest test.
arm_run() {
    local name=$1
    arm_names+=("$name")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    arm_run_one "$@" &
}

arm_run_one() {
    local name=$1 cpu=$2 filter=$3 t0
    shift 3
    t0=$(now_ms)
    {
        echo "---- aarch64 $name: qemu-aarch64 -cpu $cpu $* fa-tests-shim --filter='$filter'"
        env "$@" OMP_NUM_THREADS=2 FA_SHIM_TIMEOUT_SCALE=10 qemu-aarch64 -L / -cpu "$cpu" \
            "$build_arm/tests/shim/fa-tests-shim" --jobs=1 --filter="$filter" "${test_args[@]}" 2>&1 || true
    } >"$tmp/arm-$name.log"
    echo $(($(now_ms) - t0)) >"$tmp/arm-$name.ms"
}

# After every run: each one's log (less its [PASS] lines) in the order started, its counts into the
# totals and the stage note; fails if a run failed a test or printed no summary line.
arm_collect() {
    local name line note="" failed=0
    for name in "${arm_names[@]}"; do
        grep -v '^\[PASS\]' "$tmp/arm-$name.log" || true
        line=$(grep -o 'Passing: [0-9]* | Failing: [0-9]*' "$tmp/arm-$name.log" | tail -n 1 || true)
        if [ -z "$line" ]; then
            echo "aarch64 $name: no summary line" >&2
            failed=1
            continue
        fi
        echo "$line" | awk '{print $2, $5}' >>"$tmp/totals"
        note="$note${note:+, }$name $(echo "$line" | awk '{print $2}') $(fmt_s "$(cat "$tmp/arm-$name.ms")")"
        echo "$line" | grep -q 'Failing: 0$' || failed=1
    done
    # the runs overlapped: their times do not add up to the stage's
    echo "$jobs side by side: $note" >"$tmp/stage.note"
    return "$failed"
}

arm_suites_run() {
    arm_names=()
    # the longest runs first, so that the short ones fill in beside them
    # sve-default-vector-length is in bytes; sve=off: a CPU with NEON only
    arm_run sve256 max,sve-default-vector-length=32 "@($arm_kernels|half_invariance/*)" FLASHATTN_ISA=sve \
        FA_TEST_SIMD=sve256
    arm_run sve512 max,sve-default-vector-length=64 "@($arm_kernels|$arm_odd_blocks_invariance)" FLASHATTN_ISA=sve \
        FA_TEST_SIMD=sve512
    arm_run sve128 max,sve-default-vector-length=16 "@($arm_kernels|$arm_backward_invariance)" FLASHATTN_ISA=sve \
        FA_TEST_SIMD=sve128
    # qemu's max has BF16, so the automatic choice is neon_bf16 at every length: each run names its table
    arm_run neon max,sve=off "@($arm_kernels|$arm_forward_invariance|quantized_cache/*|decode_token_order/*)" \
        FLASHATTN_ISA=neon FA_TEST_SIMD=neon
    arm_run ref max "$arm_ref_suites" FLASHATTN_ISA=ref FA_TEST_SIMD=ref
    arm_run neon_bf16 max,sve=off "$arm_bf16_suites" FLASHATTN_ISA=neon_bf16 FA_TEST_SIMD=neon_bf16
    # sve_bf16 (sve's float kernels, checked above): its bf16 paths at 128 bits, where the dot's blocks
    # are neon_bf16's 16 columns; at 512 its bf16 set alone (blocks of 64 columns, tails of 1-3 vectors,
    # a vector a line in the softmax); at 2048 the automatic choice
    arm_run sve_bf16_128 max,sve-default-vector-length=16 "$arm_bf16_suites" FLASHATTN_ISA=sve_bf16 \
        FA_TEST_SIMD=sve_bf16
    arm_run sve_bf16_512 max,sve-default-vector-length=64 'kernel_pairs/*' FLASHATTN_ISA=sve_bf16 \
        FA_TEST_SIMD=sve_bf16
    arm_run sve1024 max,sve-default-vector-length=128 "@($arm_wide_suites)" FLASHATTN_ISA=sve \
        FA_TEST_SIMD=sve1024
    arm_run sve2048 max,sve-default-vector-length=256 "@($arm_wide_suites|kernel_pairs/*)" FA_TEST_SIMD=sve2048
    wait
    arm_collect
}

# tests/abi/run.sh: the grown library in build_abi, built as build is; the clients in tmp.
abi_layouts() {
    FA_JOBS=$jobs "$root/tests/abi/run.sh" "$build" "$build_abi" "$tmp/abi"
}

install_relocated() {
    rm -rf "$tmp/stage" "$tmp/prefix"
    cmake --install "$build" --prefix "$tmp/stage"
    # Move it after installing: a package that hard-codes its prefix fails the consumer stage.
    mv "$tmp/stage" "$tmp/prefix"
    (cd "$tmp/prefix" && find . -type f -o -type l | sort)
}

echo "flashattn test.sh: $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?'), $(nproc) CPUs," \
    "builds in $build, $build_asan and $build_tsan, -j$jobs$([ "$heavy" = 1 ] && echo ', FA_TEST_HEAVY=1')"

stage "deps" fa_deps test
stage "format (clang-format, 110 columns)" "$root/scripts/format.sh" --check
stage "configure ($(basename "$build"))" configure "$build" -DFLASHATTN_BUILD_BENCH=ON -DFLASHATTN_TEST_SHIM=ON
stage "build ($(basename "$build"))" cmake --build "$build" -j "$jobs"
if [ "$quick" = 1 ]; then
    stage "suite OMP_NUM_THREADS=2" suite_with_threads 2 "$build"
    print_summary
    printf '\ntest.sh --quick: PASSED, %d stages in %s (the full check: scripts/test.sh)\n' "$stage_no" \
        "$(fmt_s $(($(now_ms) - t_start)))"
    print_totals
    exit 0
fi
for n in $threads; do
    stage "suite OMP_NUM_THREADS=$n" suite_with_threads "$n" "$build"
done
report_tables
read -r -a tables <<<"$(cpu_tables)"
default=$(default_table)
avx512_family_ran=0
case $default in avx512 | avx512_bf16 | amx) avx512_family_ran=1 ;; esac
for t in "${tables[@]}"; do
    [ "$t" != "$default" ] || continue # the suites above ran on it
    case $t in
    avx512 | avx512_bf16 | amx)
        if [ "$avx512_family_ran" = 1 ]; then
            stage "suite FLASHATTN_ISA=$t (2 threads, bf16 paths)" suite_on_table_bf16_paths "$t" "$build"
            continue
        fi
        avx512_family_ran=1
        ;;
    esac
    stage "suite FLASHATTN_ISA=$t (2 threads)" suite_on_table "$t" "$build"
done
if [ -e "$build/libflashattn_mpi.so" ]; then
    stage "mpi (fa-mpi-tests, P = 1..4 ranks)" mpi_tests
elif [ "${CI:-}" = true ]; then
    stage "mpi (fa-mpi-tests)" mpi_missing
else
    skipped mpi "the MPI component is not built: no MPI found (scripts/deps.sh test), or FLASHATTN_MPI=OFF"
fi
stage "bench tools (fa-bench, sweeps)" bench_tools
if [ -x "$root/scripts/hostile_runtime.sh" ]; then
    stage "hostile runtime" hostile_runtime
else
    skipped "hostile runtime" "no scripts/hostile_runtime.sh"
fi
if [ "${FA_SKIP_ARM:-0}" = 1 ]; then
    skipped aarch64 "FA_SKIP_ARM=1"
else
    stage "aarch64 cross build ($(basename "$build_arm")) and budget" arm_build
    stage "aarch64 suites under qemu (ref, neon, neon_bf16, sve 128-2048, sve_bf16)" arm_suites_run
fi
if [ "${FA_SKIP_ASAN:-0}" = 1 ]; then
    skipped asan "FA_SKIP_ASAN=1"
else
    stage "asan+ubsan build ($(basename "$build_asan"))" asan_build
    stage "asan+ubsan suite" asan_suite
fi
if [ "${FA_SKIP_TSAN:-0}" = 1 ]; then
    skipped tsan "FA_SKIP_TSAN=1"
else
    stage "tsan build ($(basename "$build_tsan"), clang)" tsan_build
    stage "tsan suite (Archer, libomp)" tsan_suite
fi
if [ "${FA_SKIP_FUZZ:-0}" = 1 ]; then
    skipped fuzz "FA_SKIP_FUZZ=1"
else
    stage "fuzz (libFuzzer, ${fuzz_seconds} s)" fuzz
fi
if [ "${FA_SKIP_VALGRIND:-0}" = 1 ]; then
    skipped valgrind "FA_SKIP_VALGRIND=1"
else
    stage "valgrind memcheck$([ "$heavy" = 1 ] && echo ' (whole suite)')" valgrind_memcheck
fi
if [ "${FA_SKIP_PYTHON:-0}" = 1 ]; then
    skipped python "FA_SKIP_PYTHON=1"
else
    stage "python (pip wheel, import, pytest tests/python)" python_package
fi
stage "install (relocated prefix)" install_relocated
stage "consumer (find_package + pkg-config)" "$root/tests/consumer/run.sh" "$tmp/prefix" "$tmp/consumer"
stage "abi (0.4.0 and grown layouts, ctypes mirror)" abi_layouts

print_summary
printf '\ntest.sh: PASSED, %d stages in %s\n' "$stage_no" "$(fmt_s $(($(now_ms) - t_start)))"
print_totals
