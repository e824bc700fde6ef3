#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/node_check.sh — the many-core measurement of one node in one run, from the project root:
#
#   scripts/node_check.sh [--threads LIST] [fa-bench options...]
#
# 1. scripts/thread_sweep.sh with --preset scaling, forward: results/sweep.{csv,json,txt};
# 2. the same sweep, forward+backward: results/fwdbwd/sweep.{csv,json,txt};
# 3. bench/compare_torch.py on both sweeps' rows (PyTorch timed on the same shapes, passes and
#    thread counts): results/torch.csv, and its table in results/torch.txt;
# 4. fa-schedule (bench/schedule/), the schedule simulator: its predicted efficiency of the forward's
#    dynamic schedule for the scaling shapes and the other planned ones at LIST and 16,64,128,256
#    threads, beside the efficiency of real calls at LIST: results/schedule.{json,txt};
# 5. all of it in one file, results/node_check.md, to send back.
# LIST defaults to thread_sweep.sh's: powers of two up to the CPUs this process may use, and that
# count (1,2,4,8,16 on 16). Each row names the node and the build, so the results of several nodes
# can be concatenated. About 5 minutes on a 16-core node. fa-bench checks every thread count against the
# float64 oracle and for bitwise identical output before it reports a speed; a failed check stops
# the script with fa-bench's status. Extra options go to both fa-bench runs (--reps 2, --blas-reps 1
# for the BLAS baseline, or a smaller --nq for a rehearsal on a small machine). Progress lines go to
# stderr. Where the node has no gnuplot, draw the sweeps afterwards elsewhere with
# `scripts/thread_sweep.sh --plot results/sweep.csv --title "..."`.
# Environment: FA_RESULTS_DIR (default results/), thread_sweep.sh's (FA_BENCH, FA_BUILD_DIR),
# FA_SCHEDULE (the fa-schedule to run; default: beside fa-bench, built there when missing) and
# FA_SCHEDULE_ARGS (fa-schedule's options instead of timing real calls, e.g. --no-calibrate).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
threads=()
args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --threads) [ $# -ge 2 ] || { echo "node_check.sh: --threads needs a list" >&2; exit 2; }
               threads=(--threads "$2"); shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
    esac
done

results=${FA_RESULTS_DIR:-$root/results}
mkdir -p "$results/fwdbwd"
echo "node_check.sh: $(hostname), $(nproc) CPUs, started $(date -u +%FT%TZ)"
FA_RESULTS_DIR=$results scripts/thread_sweep.sh ${threads[@]+"${threads[@]}"} --preset scaling --pass fwd \
    ${args[@]+"${args[@]}"}
FA_RESULTS_DIR=$results/fwdbwd scripts/thread_sweep.sh ${threads[@]+"${threads[@]}"} --preset scaling \
    --pass fwdbwd ${args[@]+"${args[@]}"}
if command -v python3 >/dev/null 2>&1; then
    python3 bench/compare_torch.py --json "$results/sweep.json" --json "$results/fwdbwd/sweep.json" \
        --csv "$results/torch.csv" | tee "$results/torch.txt"
else
    echo "node_check.sh: no python3 here: no PyTorch comparison" | tee "$results/torch.txt"
fi

# The simulator: the fa-schedule beside the fa-bench the sweeps ran (thread_sweep.sh's choice).
schedule=${FA_SCHEDULE:-}
if [ -z "$schedule" ]; then
    if [ -n "${FA_BENCH:-}" ]; then
        schedule=$(dirname "$FA_BENCH")/schedule/fa-schedule
        [ -x "$schedule" ] || schedule=$(dirname "$FA_BENCH")/fa-schedule
    else
        build=${FA_BUILD_DIR:-$root/build-bench}
        schedule=$build/bench/schedule/fa-schedule
        [ -x "$schedule" ] || cmake --build "$build" -j "${FA_JOBS:-$(nproc)}" --target fa-schedule
    fi
fi
[ -x "$schedule" ] || { echo "node_check.sh: no fa-schedule at $schedule (set FA_SCHEDULE)" >&2; exit 1; }
swept=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "threads") c = i; next }
    c && !seen[$c]++ { printf "%s%s", n++ ? "," : "", $c }' "$results/sweep.csv")
[ -n "$swept" ] || swept=1
if [ -n "${FA_SCHEDULE_ARGS:-}" ]; then
    read -r -a sched_args <<<"$FA_SCHEDULE_ARGS"
else
    sched_args=(--measure "$swept" --reps 2)
fi
"$schedule" --threads "$swept,16,64,128,256" "${sched_args[@]}" --json "$results/schedule.json" \
    | tee "$results/schedule.txt"

# One file with everything, to send back.
{
    echo "# node_check.sh: $(hostname), $(nproc) CPUs, $(date -u +%FT%TZ)"
    echo
    for part in "forward sweep:sweep.txt" "forward+backward sweep:fwdbwd/sweep.txt" \
        "PyTorch side by side:torch.txt" "schedule simulator:schedule.txt"; do
        echo "## ${part%%:*}"
        echo
        echo '```'
        cat "$results/${part#*:}"
        echo '```'
        echo
    done
} >"$results/node_check.md"
echo "node_check.sh: $results/node_check.md written; done $(date -u +%FT%TZ)"
