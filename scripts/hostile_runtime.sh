#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/hostile_runtime.sh — the threading-runtime tests of fa-tests under hostile runtimes.
#
# Runs the suites that exercise threads, placement and processes (and the accuracy and invariance
# suites, which must not care) once per environment below, each under `timeout`:
#
#   1. taskset -c 0                              one allowed CPU (a Slurm step or cgroup of one core)
#   2. OMP_NUM_THREADS=4*nproc                   every default team oversubscribes the machine 4x
#   3. OMP_PROC_BIND=true OMP_PLACES=cores       the OpenMP runtime binds its threads itself
#   4. OMP_THREAD_LIMIT=2                        every team of the process capped, nested ones included
#   5. all of them at once, on the last allowed CPU (not CPU 0)
#
# Every run must pass. One line per run (status, time, Criterion's counts), then a summary; the
# status is non-zero when any run failed or timed out, and the end of a failing run's log is shown.
#
# Usage: scripts/hostile_runtime.sh [PATH/TO/fa-tests]
# Environment:
#   FA_BUILD_DIR          build directory whose tests/fa-tests is used (default build/ in the repo)
#   FA_HOSTILE_TIMEOUT    seconds per run before it counts as hung (default 300)
#   FA_HOSTILE_JOBS       Criterion --jobs per run (default 2, the CI machine's cores)
#   FA_HOSTILE_FILTER     Criterion --filter pattern (default: the suites listed in `filter` below)
#   FA_TEST_ARGS          extra arguments for every run
#   FA_KEEP_TMP=1         keep the logs
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${FA_BUILD_DIR:-$root/build}
bin=${1:-$build/tests/fa-tests}
limit=${FA_HOSTILE_TIMEOUT:-300}
jobs=${FA_HOSTILE_JOBS:-2}
filter=${FA_HOSTILE_FILTER:-'@(runtime|stress|nested|fork|restricted|placement|oom|alloc|invariance|accuracy)/*'}
read -r -a extra <<<"${FA_TEST_ARGS:-}"

if [ ! -x "$bin" ]; then
    echo "hostile_runtime.sh: no test executable at $bin (build first, or pass its path)" >&2
    exit 2
fi
for tool in taskset timeout; do
    command -v "$tool" >/dev/null || { echo "hostile_runtime.sh: $tool not found" >&2; exit 2; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fa-hostile.XXXXXX")
cleanup() {
    if [ "${FA_KEEP_TMP:-0}" = 1 ]; then echo "hostile_runtime.sh: logs kept in $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

now_ms() { date +%s%3N; }
fmt_s() { printf '%d.%ds' $(($1 / 1000)) $(($1 % 1000 / 100)); }

# The CPUs this script may use, and the last of them.
cpus=$(nproc)
last_cpu=$(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | sed 's/.*-//' | sort -n | tail -1)
over=$((4 * cpus))

# The OpenMP and library variables a run must not inherit from the caller's shell.
clean_env=(-u OMP_NUM_THREADS -u OMP_PROC_BIND -u OMP_PLACES -u OMP_THREAD_LIMIT -u OMP_DYNAMIC
           -u OMP_MAX_ACTIVE_LEVELS -u OMP_NESTED -u GOMP_CPU_AFFINITY -u FLASHATTN_BIND)

names=()
commands=()
add_run() { # add_run NAME COMMAND-PREFIX...
    names+=("$1")
    shift
    commands+=("$*")
}
add_run "taskset -c 0" taskset -c 0
add_run "OMP_NUM_THREADS=$over (4 x $cpus CPUs)" env "OMP_NUM_THREADS=$over"
add_run "OMP_PROC_BIND=true OMP_PLACES=cores" env OMP_PROC_BIND=true OMP_PLACES=cores
add_run "OMP_THREAD_LIMIT=2" env OMP_THREAD_LIMIT=2
add_run "all at once on CPU $last_cpu" taskset -c "$last_cpu" env "OMP_NUM_THREADS=$over" OMP_PROC_BIND=true \
    OMP_PLACES=cores OMP_THREAD_LIMIT=2

echo "hostile_runtime.sh: $bin"
echo "hostile_runtime.sh: filter $filter, --jobs=$jobs, timeout ${limit}s per run, $cpus CPUs (last: $last_cpu)"
t_start=$(now_ms)
failed=0
lines=()
for i in "${!names[@]}"; do
    log="$tmp/run$((i + 1)).log"
    read -r -a prefix <<<"${commands[$i]}"
    t0=$(now_ms)
    set +e
    env "${clean_env[@]}" timeout --kill-after=10 "$limit" "${prefix[@]}" "$bin" "--filter=$filter" "--jobs=$jobs" \
        "${extra[@]}" >"$log" 2>&1
    rc=$?
    set -e
    dt=$(($(now_ms) - t0))
    counts=$(grep -a 'Synthesis:' "$log" | tail -1 | sed 's/.*Synthesis: //; s/ *$//')
    [ -n "$counts" ] || counts="no synthesis line"
    if [ $rc -eq 0 ] && grep -aq 'Failing: 0 | Crashing: 0' "$log"; then
        status=ok
    elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        status="TIMEOUT after ${limit}s"
        failed=$((failed + 1))
    else
        status="FAILED (status $rc)"
        failed=$((failed + 1))
    fi
    line=$(printf '[%d/%d] %-44s %-22s %8s  %s' $((i + 1)) ${#names[@]} "${names[$i]}" "$status" "$(fmt_s $dt)" "$counts")
    lines+=("$line")
    echo "hostile_runtime.sh: $line"
    if [ "$status" != ok ]; then
        echo "---- end of the log of run $((i + 1)) ($log) ----"
        grep -av '^\[seed\]' "$log" | tail -40
        echo "----"
    fi
    # The figures the tests print (threads x rounds, nesting, fork), once per run.
    grep -a '^\[stress\]\|^\[fork\]' "$log" | sed 's/^/    /' || true
done

echo
echo "==== hostile runtimes: summary ===="
printf '  %s\n' "${lines[@]}"
total=$(($(now_ms) - t_start))
if [ $failed -ne 0 ]; then
    printf 'hostile_runtime.sh: %d of %d runs FAILED (%s in total)\n' "$failed" ${#names[@]} "$(fmt_s $total)"
    exit 1
fi
printf 'hostile_runtime.sh: all %d runs passed (%s in total)\n' ${#names[@]} "$(fmt_s $total)"
