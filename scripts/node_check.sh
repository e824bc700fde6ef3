#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/node_check.sh — the many-core measurement of one node in one run, from the project root:
#
#   scripts/node_check.sh [--threads LIST] [fa-bench options...]
#
# 1. scripts/thread_sweep.sh with --preset scaling, forward: results/sweep.{csv,json,txt};
# 2. the same sweep, forward+backward: results/fwdbwd/sweep.{csv,json,txt};
# 3. bench/compare_torch.py on both sweeps' rows (PyTorch timed on the same shapes, passes and
#    thread counts): results/torch.csv, and its table in results/torch.txt.
# LIST defaults to thread_sweep.sh's: powers of two up to the CPUs this process may use, and that
# count (1,2,4,8,16 on 16). Eight files in all, each row naming the node and the build, so the
# results of several nodes can be concatenated. fa-bench checks every thread count against the
# float64 oracle and for bitwise identical output before it reports a speed; a failed check stops
# the script with fa-bench's status. Extra options go to both fa-bench runs (--reps 2, --blas-reps 1
# for the BLAS baseline, or a smaller --nq for a rehearsal on a small machine). Progress lines go to
# stderr. Where the node has no gnuplot, draw the sweeps afterwards elsewhere with
# `scripts/thread_sweep.sh --plot results/sweep.csv --title "..."`.
# Environment: FA_RESULTS_DIR (default results/), and thread_sweep.sh's (FA_BENCH, FA_BUILD_DIR).
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
echo "node_check.sh: done $(date -u +%FT%TZ)"
