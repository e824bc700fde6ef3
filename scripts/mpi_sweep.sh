#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/mpi_sweep.sh — run fa-bench-mpi over ranks x threads, strong and weak scaling; write
# results/mpi_sweep.csv (and .txt) and, where gnuplot is installed, results/mpi_sweep.png.
#
#   mpi_sweep.sh                           P = 1,2,4 ranks x T = 1,2 threads, strong (N = 8192) and
#                                          weak (N = 2048 x P); f32, B=1, H=8, D=128, causal, zigzag,
#                                          fwd and bwd: about 3 minutes on a quiet 2-core machine
#   mpi_sweep.sh --ranks 1,2,4,8 --threads 1,4 --n 65536 --weak-n 16384
#                                          a node of your own: any lists and sizes
#   mpi_sweep.sh --mode strong --h 16 --d 64 --reps 5
#                                          other arguments go to fa-bench-mpi as they are (--h --hkv
#                                          --d --dv --b --causal --layout --dtype --pass --reps
#                                          --rounds --warmup --seed ...)
#   mpi_sweep.sh --plot FILE [--title TEXT]
#                                          no run: draws results/mpi_sweep.png from an mpi_sweep.csv
#                                          made elsewhere
#
# Options of the sweep itself:
#   --ranks LIST        rank counts P (default 1,2,4)
#   --threads LIST      threads per rank T (default 1,2)
#   --mode M            strong | weak | both (default both)
#   --n N               strong scaling: the global length, the same at every point (default 8192)
#   --weak-n N0         weak scaling: N = N0 x P, each rank's shard N0 positions (default 2048)
#   --no-oversubscribe  leave out the points below instead of running them with a warning
#   --single-copy M     Open MPI's shared-memory single copy: cma | none | auto (default auto: cma
#                       when a 2-rank trial run works, else none; scripts/mpirun.sh says why)
#
# Points: every (P, T) with P x T <= the CPUs this process may use (nproc), each rank on T cores of
# its own (Open MPI: --map-by slot:PE=T --bind-to core). A point beyond the CPUs runs only at T = 1
# (so every P of the list runs), oversubscribed: ranks unbound and sharing cores, which fa-bench-mpi
# reports, with a warning here; its figures say how the ring behaves, not what the library reaches.
# Each point is one fa-bench-mpi run, so the one-process reference (P x T threads on the same
# cores) and the ratio to it come from the same run as the MPI figures.
#
# Weak scaling keeps each rank's shard length, N0, fixed (N = N0 x P), as context parallelism is
# used: memory per rank stays the same, and so do the compute and the bytes of one ring step
# ((N/P)^2 pairs against N/P rows), while a rank's work per call grows with P (causal or not, the
# pairs grow as N^2). Its efficiency is GFLOP/s per core against the P = 1 point of the same T.
#
# Which fa-bench-mpi: $FA_BENCH_MPI when set, else $FA_BUILD_DIR/bench/mpi/fa-bench-mpi, where
# FA_BUILD_DIR defaults to build-bench/, configured (Release) and built when it is missing (MPI must
# be found: scripts/deps.sh test installs Open MPI). Runs go through scripts/mpirun.sh; MPIRUN and
# FA_MPIRUN_ARGS as there (a set FA_MPIRUN_ARGS replaces the binding options above).
# Environment: FA_BENCH_MPI, FA_BUILD_DIR, FA_JOBS (build jobs), FA_RESULTS_DIR (default results/).
set -euo pipefail
me=${0##*/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
out=${FA_RESULTS_DIR:-$root/results}

ranks_list=1,2,4
threads_list=1,2
mode=both
n_strong=8192
n_weak=2048
oversubscribe=1
single_copy=auto
plot_only=""
title=""
args=()
need() { [ $# -ge 2 ] || { echo "$me: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
    --ranks) need "$@"; ranks_list=$2; shift 2 ;;
    --threads) need "$@"; threads_list=$2; shift 2 ;;
    --mode) need "$@"; mode=$2; shift 2 ;;
    --n) need "$@"; n_strong=$2; shift 2 ;;
    --weak-n) need "$@"; n_weak=$2; shift 2 ;;
    --no-oversubscribe) oversubscribe=0; shift ;;
    --single-copy) need "$@"; single_copy=$2; shift 2 ;;
    --plot) need "$@"; plot_only=$2; shift 2 ;;
    --title) need "$@"; title=$2; shift 2 ;;
    --csv | --threads=* | --n=* | --ref-threads | --ref-threads=*)
        echo "$me: $1 is the sweep's to set (see --help)" >&2; exit 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
    esac
done
case "$mode" in strong | weak | both) ;; *) echo "$me: --mode strong|weak|both, not $mode" >&2; exit 2 ;; esac
case "$single_copy" in cma | none | auto) ;; *) echo "$me: --single-copy cma|none|auto" >&2; exit 2 ;; esac
for list in "$ranks_list" "$threads_list"; do
    [[ "$list" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "$me: not a list of counts: $list" >&2; exit 2; }
done
mkdir -p "$out"
csv=$out/mpi_sweep.csv

if [ -n "$plot_only" ]; then
    [ -f "$plot_only" ] || { echo "$me: no file $plot_only" >&2; exit 2; }
    csv_in=$plot_only
else
    bench=${FA_BENCH_MPI:-}
    if [ -z "$bench" ]; then
        build=${FA_BUILD_DIR:-$root/build-bench}
        bench=$build/bench/mpi/fa-bench-mpi
        if [ ! -x "$bench" ]; then
            if [ ! -f "$build/CMakeCache.txt" ]; then
                echo "$me: configuring $build (Release)"
                cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFLASHATTN_BUILD_BENCH=ON \
                    -DFLASHATTN_BUILD_TESTS=OFF -DFLASHATTN_MPI=ON >/dev/null
            fi
            cmake --build "$build" -j "${FA_JOBS:-$(nproc)}" --target fa-bench-mpi
        fi
    fi
    [ -x "$bench" ] || { echo "$me: no fa-bench-mpi at $bench" >&2; exit 1; }
    launcher=${MPIRUN:-mpirun}
    openmpi=0
    if "$launcher" --version 2>&1 | grep -q 'Open MPI'; then openmpi=1; fi
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT

    if [ "$openmpi" = 1 ] && [ -z "${OMPI_MCA_btl_vader_single_copy_mechanism:-}" ]; then
        if [ "$single_copy" = auto ]; then
            # CMA moves shards 2-4x faster here, but a container without CAP_SYS_PTRACE refuses it.
            if OMPI_MCA_btl_vader_single_copy_mechanism=cma FA_MPIRUN_ARGS="--bind-to none" \
                timeout 120 "$root/scripts/mpirun.sh" 2 "$bench" --n 2048 --h 1 --d 64 --reps 1 --rounds 1 \
                --pass fwd >"$work/trial.txt" 2>&1; then
                single_copy=cma
            else
                single_copy=none
                echo "$me: CMA does not work here (see $me --help): shared-memory copies through the segment"
            fi
        fi
        export OMPI_MCA_btl_vader_single_copy_mechanism=$single_copy
    fi

    cpus=$(nproc)
    IFS=, read -r -a ranks <<<"$ranks_list"
    IFS=, read -r -a threads <<<"$threads_list"
    rm -f "$csv"
    : >"$out/mpi_sweep.txt"
    echo "$me: $bench on $cpus CPUs; ranks $ranks_list x threads $threads_list; mode $mode;" \
        "single copy ${OMPI_MCA_btl_vader_single_copy_mechanism:-as the launcher sets it}"
    sweeps=()
    [ "$mode" = weak ] || sweeps+=(strong)
    [ "$mode" = strong ] || sweeps+=(weak)
    failed=0
    for sweep in "${sweeps[@]}"; do
        for p in "${ranks[@]}"; do
            for t in "${threads[@]}"; do
                over=0
                if [ $((p * t)) -gt "$cpus" ]; then
                    if [ "$t" != 1 ] || [ "$oversubscribe" = 0 ]; then
                        echo "$me: $sweep: P=$p x T=$t needs $((p * t)) CPUs, $cpus here: left out"
                        continue
                    fi
                    over=1
                    echo "$me: warning: $sweep: P=$p x T=1 on $cpus CPUs: oversubscribed, ranks share cores;" \
                        "its figures show the ring's behaviour, not the library's speed"
                fi
                n=$n_strong
                [ "$sweep" = weak ] && n=$((n_weak * p))
                binding=${FA_MPIRUN_ARGS:-}
                if [ -z "${FA_MPIRUN_ARGS+set}" ] && [ "$openmpi" = 1 ]; then
                    if [ "$over" = 1 ]; then binding="--bind-to none"; else binding="--map-by slot:PE=$t --bind-to core"; fi
                fi
                echo "$me: $sweep: P=$p x T=$t, N=$n: FA_MPIRUN_ARGS=\"$binding\" scripts/mpirun.sh $p" \
                    "fa-bench-mpi --n $n --threads $t ${args[*]+${args[*]}}"
                status=0
                FA_MPIRUN_ARGS="$binding" "$root/scripts/mpirun.sh" "$p" "$bench" --n "$n" --threads "$t" \
                    ${args[@]+"${args[@]}"} --csv "$work/run.csv" >"$work/run.txt" 2>"$work/run.err" || status=$?
                { echo "== $sweep: P=$p x T=$t, N=$n"; cat "$work/run.txt"; echo; } >>"$out/mpi_sweep.txt"
                if [ "$status" != 0 ] || [ ! -f "$work/run.csv" ]; then
                    cat "$work/run.err" >&2
                    echo "$me: fa-bench-mpi failed (status $status) at P=$p x T=$t" >&2
                    failed=1
                    continue
                fi
                grep -v '^fa-bench-mpi: \[' "$work/run.err" >&2 || true
                sed -n '/^pass .*GFLOP /,/^$/p' "$work/run.txt" | sed '/^$/d'
                # The sweep's own columns first: which sweep, and whether the point was oversubscribed.
                awk -v s="$sweep" -v o="$over" -v head="$([ -f "$csv" ] && echo 0 || echo 1)" \
                    'NR == 1 { if (head) print "sweep,oversubscribed," $0; next } { print s "," o "," $0 }' \
                    "$work/run.csv" >>"$csv"
                rm -f "$work/run.csv"
            done
        done
    done
    [ -f "$csv" ] || { echo "$me: no point ran" >&2; exit 1; }
    echo "$me: wrote $csv and $out/mpi_sweep.txt"
    [ "$failed" = 0 ] || { echo "$me: some points failed (above); no plot" >&2; exit 1; }
    csv_in=$csv
fi

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "$me: gnuplot is not installed: no mpi_sweep.png (apt-get install gnuplot-nox)"
    exit 0
fi

# Three panels, one gnuplot data block per series; columns are found by name, quoted fields parsed.
work2=$(mktemp -d)
trap 'rm -rf "$work2" ${work:+"$work"}' EXIT
awk -v dir="$work2" '
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
function add(panel, key, x, y) {
    if (!((panel, key) in block)) { block[panel, key] = nb[panel]++; title[panel, block[panel, key]] = key }
    data[panel, block[panel, key]] = data[panel, block[panel, key]] x " " y "\n"
}
NR == 1 { n = split_csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
{
    split_csv($0, f)
    s = f[col["sweep"]]; pass = f[col["pass"]]; p = f[col["ranks"]]; t = f[col["threads"]]
    over = f[col["oversubscribed"]] == "1" ? " (oversubscribed)" : ""
    if (s == "strong") {
        add(1, pass " MPI, " t " thread" (t == 1 ? "" : "s") " per rank", p * t, f[col["mpi_gflops"]])
        # The one-process reference ran in every point with P x T threads: the best of them per count.
        c = p * t; r = f[col["ref_gflops"]] + 0
        if (!((pass, c) in ref)) { nref[pass]++; refx[pass, nref[pass]] = c; passes[pass] = 1 }
        if (!((pass, c) in ref) || r > ref[pass, c]) ref[pass, c] = r
        shape = "N=" f[col["n"]]
    }
    add(2, s " " pass ", T=" t, p, 100 * f[col["mpi_over_ref"]])
    if (s == "weak") { # per core in use: an oversubscribed point has only the CPUs there are
        c = ("cpus" in col) ? f[col["cpus"]] + 0 : 0
        cores = c > 0 && c < p * t ? c : p * t
        per_core = f[col["mpi_gflops"]] / cores
        if (p == 1) base[pass, t] = per_core
        if ((pass, t) in base) add(3, pass " efficiency, T=" t, p, 100 * per_core / base[pass, t])
        if (p > 1 && f[col["overlap_mean"]] != "") add(3, pass " overlap (mean over ranks), T=" t, p, 100 * f[col["overlap_mean"]])
        weak = "N0=" f[col["n"]] / p
    }
    what = f[col["dtype"]] " B=" f[col["b"]] " H=" f[col["hq"]] " D=" f[col["d"]] " " f[col["causal"]] " " f[col["layout"]]
}
END {
    for (pass in passes) {
        for (i = 2; i <= nref[pass]; i++) # insertion sort of the counts
            for (k = i; k > 1 && refx[pass, k - 1] > refx[pass, k]; k--) {
                c = refx[pass, k]; refx[pass, k] = refx[pass, k - 1]; refx[pass, k - 1] = c
            }
        for (i = 1; i <= nref[pass]; i++)
            add(1, pass " one process, P x T threads (best of its runs)", refx[pass, i], ref[pass, refx[pass, i]])
    }
    for (panel = 1; panel <= 3; panel++) {
        file = dir "/data" panel
        printf "" > file
        for (b = 0; b < nb[panel]; b++) {
            printf "%s\n\n", data[panel, b] > file
            print title[panel, b] > (dir "/titles" panel)
        }
    }
    print what > (dir "/what"); print (shape == "" ? "-" : shape) > (dir "/strong"); print (weak == "" ? "-" : weak) > (dir "/weak")
}' "$csv_in"

terminal="pngcairo size 1600,620 font ',10'"
gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || terminal="png size 1600,620"
plots() { # $1: panel; the series of its data file, or a placeholder when it has none
    local i=0 t sep=""
    if [ ! -s "$work2/titles$1" ]; then printf "NaN notitle"; return; fi
    while IFS= read -r t; do
        printf "%s'%s' index %d using 1:2 with linespoints title '%s'" "$sep" "$work2/data$1" "$i" "$t"
        sep=", "
        i=$((i + 1))
    done <"$work2/titles$1"
}
if [ -z "$title" ]; then
    host=$(hostname 2>/dev/null || echo machine)
    cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || true)
    title="$host, ${cpu:-unknown CPU}, $(date +%F)"
fi
cat >"$work2/plot.gp" <<GP
set terminal $terminal
set output '$out/mpi_sweep.png'
set multiplot layout 1,3 title "fa-bench-mpi sweep, $(cat "$work2/what"): ${title//\"/}"
set grid
set key below vertical
set logscale x 2
set title 'strong scaling ($(cat "$work2/strong")): GFLOP/s'
set xlabel 'P ranks x T threads (beyond the CPUs: oversubscribed)'
set yrange [0:*]
plot $(plots 1)
set title 'MPI / one process with P x T threads (%)'
set xlabel 'ranks P'
set yrange [0:*]
plot $(plots 2), 100 with lines dashtype 2 linecolor 'gray' notitle
set title 'weak ($(cat "$work2/weak") per rank): GFLOP/s per core, % of P=1; overlap %'
set xlabel 'ranks P'
set yrange [0:*]
plot $(plots 3), 100 with lines dashtype 2 linecolor 'gray' notitle
unset multiplot
GP
if gnuplot "$work2/plot.gp"; then
    echo "$me: wrote $out/mpi_sweep.png"
else
    echo "$me: gnuplot failed; the CSV is complete" >&2
fi
