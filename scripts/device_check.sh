#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/device_check.sh — issue 4's many-core measurement in one run, for a machine lent for a few
# minutes (../shared/device/README.md): on the device, from the project root,
#
#   bash .device/build-and-run.sh scripts/device_check.sh
#   scripts/device_check.sh [--threads LIST] [fa-bench options...]
#
# 1. scripts/thread_sweep.sh over LIST (default 1,2,4,8,16) with --preset device, forward:
#    results/sweep.{csv,json,txt};
# 2. the same sweep, forward+backward: results/fwdbwd/sweep.{csv,json,txt};
# 3. bench/compare_torch.py on both sweeps' rows (PyTorch timed on the same shapes, passes and
#    thread counts): results/torch.csv, and its table in results/torch.txt.
# Eight files, the number the device tool brings back. fa-bench checks every thread count against
# the float64 oracle and for bitwise identical output before it reports a speed; a failed check
# stops the script with fa-bench's status. Extra options go to both fa-bench runs (--reps 2, or a
# smaller --nq for a rehearsal on a small machine). The machine has no gnuplot: draw the sweeps
# afterwards with `scripts/thread_sweep.sh --plot results/sweep.csv --title "..."`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
threads=1,2,4,8,16
args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --threads) [ $# -ge 2 ] || { echo "device_check.sh: --threads needs a list" >&2; exit 2; }
               threads=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
    esac
done

results=${FA_RESULTS_DIR:-$root/results}
mkdir -p "$results/fwdbwd"
echo "device_check.sh: $(nproc) CPUs, threads $threads, started $(date -u +%FT%TZ)"
FA_RESULTS_DIR=$results scripts/thread_sweep.sh --threads "$threads" --preset device --pass fwd \
    ${args[@]+"${args[@]}"}
FA_RESULTS_DIR=$results/fwdbwd scripts/thread_sweep.sh --threads "$threads" --preset device --pass fwdbwd \
    ${args[@]+"${args[@]}"}
if command -v python3 >/dev/null 2>&1; then
    python3 bench/compare_torch.py --json "$results/sweep.json" --json "$results/fwdbwd/sweep.json" \
        --csv "$results/torch.csv" | tee "$results/torch.txt"
else
    echo "device_check.sh: no python3 here: no PyTorch comparison" | tee "$results/torch.txt"
fi
echo "device_check.sh: done $(date -u +%FT%TZ)"
