#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/thread_sweep.sh (installed as fa-thread-sweep, next to fa-bench) — run fa-bench over a
# thread sweep; write results/sweep.csv (and .json, .txt) and, where gnuplot is installed,
# results/sweep.png.
#
#   thread_sweep.sh                        powers of two up to the CPUs this process may use, and that
#                                          count itself (1,2,4,8,16,24 on 24), --preset prefill
#   thread_sweep.sh --threads 1,2,3,4      another list
#   thread_sweep.sh --preset scaling --reps 3 --blas-reps 1
#                                          other arguments go to fa-bench as they are; without a
#                                          --preset or shape option (--b --h --hkv --nq --nk --d --dv)
#                                          the sweep runs --preset prefill
#   thread_sweep.sh --plot FILE [--title TEXT]
#                                          no run: draws results/sweep.png from a sweep.csv made
#                                          elsewhere (a compute node without gnuplot); TEXT names that
#                                          machine in the title
#
# One fa-bench run covers the whole list, so parallel efficiency is against that run's own 1-thread
# row and the FMA peak / read-bandwidth probes are measured in the same run at every thread count.
# sweep.png: GFLOP/s and parallel efficiency (and % of the in-run peak) against threads, one line
# per shape, score modifiers and pass. fa-bench marks a row "disturbed:" when its median time is over
# 1.10x its min or an in-run probe varied as much (another process had the cores); the sweep then
# says so at its end and in the plot's title, since its speedups are not reliable.
#
# Which fa-bench: $FA_BENCH when set. Installed (no source tree around the script), the fa-bench next
# to the script, else the one on PATH. In a source tree, $FA_BUILD_DIR/bench/fa-bench, where
# FA_BUILD_DIR defaults to build-bench/, configured (Release) and built when fa-bench is missing.
# Environment:
#   FA_BENCH       the fa-bench binary to run
#   FA_BUILD_DIR   a configured build with fa-bench (source tree only)
#   FA_JOBS        build jobs (default nproc)
#   FA_RESULTS_DIR where the files go (default: results/ in the source tree; installed, results/ in
#                  the current directory)
# The BLAS baseline is off unless --blas-reps N is given; for its columns, unset OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE first unless fa-bench warns about OpenBLAS's core (fa-bench --help).
set -euo pipefail
me=${0##*/} # thread_sweep.sh, or fa-thread-sweep when installed

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# A source tree has the project's CMakeLists.txt and bench/ one level up; an installed copy has not.
root=""
if [ -f "$here/../CMakeLists.txt" ] && [ -d "$here/../bench" ]; then
    root=$(cd "$here/.." && pwd)
fi
out=${FA_RESULTS_DIR:-${root:-$PWD}/results}

threads=""
plot_only=""
title=""
args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --threads) [ $# -ge 2 ] || { echo "$me: --threads needs a list" >&2; exit 2; }
               threads=$2; shift 2 ;;
    --threads=*) threads=${1#--threads=}; shift ;;
    --plot) [ $# -ge 2 ] || { echo "$me: --plot needs a CSV file" >&2; exit 2; }
            plot_only=$2; shift 2 ;;
    --title) [ $# -ge 2 ] || { echo "$me: --title needs a text" >&2; exit 2; }
             title=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
    esac
done
mkdir -p "$out"
if [ -n "$plot_only" ]; then
    [ -f "$plot_only" ] || { echo "$me: no file $plot_only" >&2; exit 2; }
    [ ${#args[@]} -eq 0 ] || { echo "$me: --plot takes no fa-bench arguments" >&2; exit 2; }
    csv=$plot_only
else
    if [ -z "$threads" ]; then
        # Powers of two show the scaling curve in a few runs; the full count is the one users get.
        cpus=$(nproc)
        threads=1
        for ((t = 2; t < cpus; t *= 2)); do threads="$threads,$t"; done
        [ "$cpus" -gt 1 ] && threads="$threads,$cpus"
    fi
    shape_given=0
    for a in ${args[@]+"${args[@]}"}; do
        case "$a" in
        --preset | --preset=* | --b | --b=* | --h | --h=* | --hkv | --hkv=* | --nq | --nq=* | --nk | --nk=* | \
            --d | --d=* | --dv | --dv=*) shape_given=1 ;;
        esac
    done
    [ "$shape_given" = 1 ] || args=(--preset prefill ${args[@]+"${args[@]}"})

    bench=${FA_BENCH:-}
    if [ -z "$bench" ] && [ -z "$root" ]; then # installed
        if [ -x "$here/fa-bench" ]; then
            bench=$here/fa-bench
        else
            bench=$(command -v fa-bench || true)
            [ -n "$bench" ] || { echo "$me: no fa-bench next to $0 or on PATH (or set FA_BENCH)" >&2; exit 1; }
        fi
    elif [ -z "$bench" ]; then
        build=${FA_BUILD_DIR:-$root/build-bench}
        bench=$build/bench/fa-bench
        if [ ! -x "$bench" ]; then
            if [ -n "${FA_BUILD_DIR:-}" ] && [ -f "$build/CMakeCache.txt" ]; then
                cmake --build "$build" -j "${FA_JOBS:-$(nproc)}" --target fa-bench
            else
                echo "$me: building fa-bench (Release) in $build"
                cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFLASHATTN_BUILD_BENCH=ON \
                    -DFLASHATTN_BUILD_TESTS=OFF >/dev/null
                cmake --build "$build" -j "${FA_JOBS:-$(nproc)}" --target fa-bench
            fi
        fi
    fi
    [ -x "$bench" ] || { echo "$me: no fa-bench at $bench" >&2; exit 1; }

    csv=$out/sweep.csv
    echo "$me: $bench --threads $threads ${args[*]}"
    status=0
    "$bench" --threads "$threads" ${args[@]+"${args[@]}"} --csv "$csv" --json "$out/sweep.json" \
        | tee "$out/sweep.txt" || status=$?
    [ "$status" = 0 ] || { echo "$me: fa-bench failed (status $status); no plot" >&2; exit "$status"; }
    echo "$me: wrote $csv, $out/sweep.json, $out/sweep.txt"
fi

# Splits a CSV line into f[1..n] (quoted fields may hold commas and doubled quotes); returns n.
split_csv='
function split_csv(line, f,    n, i, c, q, field) {
    n = 0; field = ""; q = 0
    for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (q) {
            if (c == "\"") {
                if (substr(line, i + 1, 1) == "\"") { field = field "\""; i++ } else q = 0
            } else field = field c
        } else if (c == "\"") q = 1
        else if (c == ",") { f[++n] = field; field = "" }
        else field = field c
    }
    f[++n] = field
    return n
}

'
# The CSV's disturbed column (fa-bench's own verdict per row; absent from older files).
disturbed=$(awk "$split_csv"'
NR == 1 { n = split_csv($0, h); for (i = 1; i <= n; i++) if (h[i] == "disturbed") c = i; next }
c { split_csv($0, f); if (f[c] == "true") d++ }
END { print d + 0 }' "$csv")
rows=$(($(wc -l <"$csv") - 1))
if [ "$disturbed" -gt 0 ]; then
    echo "$me: disturbed: $disturbed of the $rows rows (fa-bench's 'disturbed:' lines say which and why) --" \
        "speedups from this run are not reliable"
fi

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "$me: gnuplot is not installed: no sweep.png (apt-get install gnuplot-nox)"
    exit 0
fi

# One gnuplot data block per series (shape, modifiers and pass), in the order the CSV has them: threads,
# GFLOP/s, efficiency %, % of peak. Columns are found by name; quoted fields are parsed.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
awk -v data="$work/data" -v titles="$work/titles" "$split_csv"'
function num(x) { return x == "" ? "NaN" : x }
NR == 1 { n = split_csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
{
    split_csv($0, f)
    causal = f[col["causal"]] == "none" ? "" : " " f[col["causal"]]
    n = f[col["nq"]] == f[col["nk"]] ? "N=" f[col["nq"]] : "Nq=" f[col["nq"]] " Nk=" f[col["nk"]]
    # The score modifiers tell apart cases of one shape (the modifiers preset); a CSV from an
    # fa-bench before them has no such columns.
    mods = ""
    if ("window_left" in col) {
        if (f[col["window_left"]] != "-1" || f[col["window_right"]] != "-1")
            mods = mods " window " f[col["window_left"]] "," f[col["window_right"]]
        if (f[col["softcap"]] != "0") mods = mods " softcap " f[col["softcap"]]
        if (f[col["alibi"]] == "true") mods = mods " alibi"
        if (f[col["bias"]] != "none") mods = mods " bias " f[col["bias"]]
        if (f[col["sinks"]] == "true") mods = mods " sinks"
    }
    key = f[col["pass"]] " " f[col["dtype"]] " B=" f[col["b"]] " H=" f[col["hq"]] " " n " D=" f[col["d"]] causal mods
    if (!(key in block)) { block[key] = nblocks++; order[block[key]] = key }
    line[block[key]] = line[block[key]] f[col["threads"]] " " num(f[col["gflops"]]) " " \
        (f[col["efficiency"]] == "" ? "NaN" : 100 * f[col["efficiency"]]) " " num(f[col["pct_peak"]]) "\n"
}
END {
    for (b = 0; b < nblocks; b++) {
        printf "%s\n\n", line[b] > data
        print order[b] > titles
    }
}' "$csv"

terminal="pngcairo size 1500,620 font ',10'"
gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || terminal="png size 1500,620"
plots() { # $1: column to plot
    local i=0 t sep=""
    while IFS= read -r t; do
        printf "%s'%s' index %d using 1:%d with linespoints title '%s'" "$sep" "$work/data" "$i" "$1" "$t"
        sep=", "
        i=$((i + 1))
    done <"$work/titles"
}
if [ -z "$title" ]; then # the run was made here
    host=$(hostname 2>/dev/null || echo machine)
    cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || true)
    title="$host, ${cpu:-unknown CPU}, $(date +%F)"
fi
[ "$disturbed" = 0 ] || title="$title; DISTURBED: $disturbed of $rows rows, speedups not reliable"
cat >"$work/plot.gp" <<GP
set terminal $terminal
set output '$out/sweep.png'
set multiplot layout 1,3 title "fa-bench thread sweep: ${title//\"/}"
set grid
set xlabel 'threads'
set key below vertical
set logscale x 2
set title 'GFLOP/s'
set yrange [0:*]
plot $(plots 2)
set title 'parallel efficiency vs the 1-thread row (%)'
set yrange [0:*]
plot $(plots 3), 100 with lines dashtype 2 linecolor 'gray' notitle
set title '% of the in-run FMA peak at the same thread count'
set yrange [0:100]
plot $(plots 4)
unset multiplot
GP
if gnuplot "$work/plot.gp"; then
    echo "$me: wrote $out/sweep.png"
else
    echo "$me: gnuplot failed; the CSV is complete" >&2
fi
