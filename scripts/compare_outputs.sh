#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/compare_outputs.sh — are two revisions' outputs the same, bit for bit?
#
#   scripts/compare_outputs.sh OLD_REV [NEW_REV]
#
# For refactors under the rule "every output byte stays the same". Builds the shared library of
# OLD_REV (a git worktree of it) and of NEW_REV (default: this checkout, uncommitted changes
# included), each in a temporary directory (Release; no tests, bench or MPI; target flashattn only),
# compiles THIS checkout's tests/bytes/output_grid.c against each one's include/ and library, and runs
# both for every kernel table (FLASHATTN_ISA = ref avx2 avx512 avx512_bf16 amx; a table this CPU or
# build lacks is named and skipped) at OMP_NUM_THREADS = 1, 2 and 3, comparing the output files with
# cmp. 1, 2 and 3 threads: on a 2-core machine the backward then runs each of its plans (fused,
# wavefront, split); the "plans" column shows which ran.
#
# Prints one row per (table, threads): cases, bytes, plans, and identical or DIFFERENT with the first
# differing case (from the grid's index). Exit status: 0 all identical; 1 a difference, or a grid
# call that failed in either revision; 2 usage, build or setup error.
#
# Environment:
#   FA_JOBS=N           parallel build jobs (default: nproc)
#   FA_COMPARE_KEEP=1   keep the temporary directory (worktree, builds, outputs and their indexes)
#   CC                  the C compiler for the grid program (default cc)
#   TMPDIR              where the temporary directory goes (default /tmp)
set -euo pipefail

usage() {
    sed -n '4,6p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
case "$1" in -h|--help) usage ;; esac

root=$(cd "$(dirname "$0")/.." && pwd)
grid_src="$root/tests/bytes/output_grid.c"
old_rev=$1
new_rev=${2:-}
jobs=${FA_JOBS:-$(nproc)}
keep=${FA_COMPARE_KEEP:-0}
tables="ref avx2 avx512 avx512_bf16 amx"
thread_counts="1 2 3"

rev_sha() {
    git -C "$root" rev-parse --verify --quiet "$1^{commit}" || { echo "compare_outputs: no such revision: $1" >&2; exit 2; }
}
old_sha=$(rev_sha "$old_rev")
new_sha=""
[ -n "$new_rev" ] && new_sha=$(rev_sha "$new_rev")
[ -f "$grid_src" ] || { echo "compare_outputs: $grid_src is missing" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fa-compare.XXXXXX")
worktrees=()
cleanup() {
    if [ "$keep" = 1 ]; then
        echo "kept: $tmp${worktrees[*]:+ (worktrees: git worktree remove --force ${worktrees[*]})}"
        return
    fi
    for w in ${worktrees[@]+"${worktrees[@]}"}; do git -C "$root" worktree remove --force "$w" >/dev/null 2>&1 || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

# The sources of a revision: a detached worktree (git worktree add), so nothing else is touched.
checkout() { # rev_sha dir
    git -C "$root" worktree add --detach --quiet "$2" "$1" || { echo "compare_outputs: git worktree add $1 failed" >&2; exit 2; }
    worktrees+=("$2")
}

build_library() { # label src_dir
    local bld="$tmp/$1-build" log="$tmp/$1-build.log"
    if ! { cmake -S "$2" -B "$bld" -DCMAKE_BUILD_TYPE=Release -DFLASHATTN_BUILD_TESTS=OFF \
               -DFLASHATTN_BUILD_BENCH=OFF -DFLASHATTN_MPI=OFF &&
           cmake --build "$bld" --target flashattn -j "$jobs"; } >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        echo "compare_outputs: building the library of $1 failed (log: $log)" >&2
        keep=1
        exit 2
    fi
}

# The grid against a revision's header and library. DT_RPATH (--disable-new-dtags), unlike RUNPATH,
# outranks LD_LIBRARY_PATH: each grid loads its own revision's library whatever the environment says.
build_grid() { # label src_dir
    local bld="$tmp/$1-build" exe="$tmp/grid-$1"
    "${CC:-cc}" -std=c11 -O2 -Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion -I"$2/include" \
        "$grid_src" -o "$exe" -L"$bld" -lflashattn -Wl,--disable-new-dtags,-rpath,"$bld" -lm ||
        { echo "compare_outputs: compiling the grid against $1 failed" >&2; exit 2; }
    local libs
    libs=$(ldd "$exe")
    case "$libs" in *"=> $bld/libflashattn"*) ;;
    *) echo "compare_outputs: grid-$1 does not load $bld's library:" >&2; echo "$libs" >&2; exit 2 ;;
    esac
}

start=$(date +%s)
new_label="working tree"
new_src=$root
checkout "$old_sha" "$tmp/old-src"
if [ -n "$new_sha" ]; then
    checkout "$new_sha" "$tmp/new-src"
    new_src="$tmp/new-src"
    new_label=$(git -C "$root" rev-parse --short "$new_sha")
fi
echo "old: $(git -C "$root" log -1 --format='%h %s' "$old_sha")"
echo "new: $new_label${new_sha:+ $(git -C "$root" log -1 --format='%s' "$new_sha")}"
echo "building both libraries (-j$jobs) in $tmp ..."
build_library old "$tmp/old-src"
build_library new "$new_src"
build_grid old "$tmp/old-src"
build_grid new "$new_src"
echo "built in $(( $(date +%s) - start )) s"
echo

mkdir -p "$tmp/out"
# Runs one revision's grid; prints its exit status. Output: $tmp/out/LABEL-TABLE-T.{bin,bin.index,log}
run_grid() { # label table threads
    local base="$tmp/out/$1-$2-$3" rc=0
    FLASHATTN_ISA=$2 OMP_NUM_THREADS=$3 "$tmp/grid-$1" -t "$3" "$base.bin" >"$base.log" 2>&1 || rc=$?
    echo "$rc"
}

summary_field() { # log field
    sed -n "s/^table=.* $2=\([^ ]*\).*/\1/p" "$1"
}

# The case that holds byte OFFSET (0-based) of the stream, from an index.
case_at() { # index offset
    awk -v o="$2" '$2 <= o && o < $2 + $3 { print $1; exit }' "$1"
}

# "identical" or "DIFFERENT: ...", the first differing byte named by its case.
compare_files() { # old_base new_base
    if cmp -s "$1.bin" "$2.bin"; then
        echo identical
        return
    fi
    local first byte
    first=$(cmp "$1.bin" "$2.bin" 2>&1 | head -n 1 || true)
    byte=$(echo "$first" | sed -n 's/.*differ: \(char\|byte\) \([0-9]*\).*/\2/p')
    if [ -n "$byte" ]; then
        echo "DIFFERENT: first at byte $((byte - 1)), case $(case_at "$2.bin.index" $((byte - 1)))"
        return
    fi
    byte=$(echo "$first" | sed -n 's/.*EOF on .* after byte \([0-9]*\).*/\1/p') # one stream is shorter
    echo "DIFFERENT: $first${byte:+, in case $(case_at "$2.bin.index" "$byte")}"
}

failed=0
compared=0
skipped=""
index_notes=""
row() { printf '%-12s %7s %6s %10s  %-23s %s\n' "$@"; }
row table threads cases bytes plans result
for table in $tables; do
    for t in $thread_counts; do
        old_rc=$(run_grid old "$table" "$t")
        new_rc=$(run_grid new "$table" "$t")
        ob="$tmp/out/old-$table-$t" nb="$tmp/out/new-$table-$t"
        if [ "$old_rc" = 3 ] && [ "$new_rc" = 3 ]; then
            skipped+="  $(head -n 1 "$nb.log")"$'\n'
            break # the same table at another thread count is not on this CPU either
        fi
        if [ "$old_rc" != 0 ] || [ "$new_rc" != 0 ]; then
            row "$table" "$t" - - - "ERROR: grid exit status old $old_rc, new $new_rc (logs: $ob.log, $nb.log)"
            grep -h -m 3 'output_grid\|table' "$ob.log" "$nb.log" | sed 's/^/    /' || true
            failed=1
            keep=1
            continue
        fi
        result=$(compare_files "$ob" "$nb")
        case "$result" in DIFFERENT*) failed=1 ;; esac
        if ! cmp -s "$ob.bin.index" "$nb.bin.index"; then
            index_notes+="  $table, $t threads: $(diff "$ob.bin.index" "$nb.bin.index" | grep -m 2 '^[<>]' | tr '\n' ' ')"$'\n'
        fi
        row "$table" "$t" "$(summary_field "$nb.log" cases)" "$(summary_field "$nb.log" bytes)" \
            "$(summary_field "$nb.log" plans)" "$result"
        compared=$((compared + 1))
        [ "$keep" = 1 ] || rm -f "$ob.bin" "$nb.bin"
    done
done
echo
[ -z "$skipped" ] || printf 'skipped (named by the grid):\n%s' "$skipped"
[ -z "$index_notes" ] || printf 'note: the index (tables, block sizes, plans, statuses) differs:\n%s' "$index_notes"
echo "$compared comparisons in $(( $(date +%s) - start )) s"
if [ "$compared" = 0 ]; then
    echo "compare_outputs: nothing was compared" >&2
    exit 2
fi
if [ "$failed" = 1 ]; then
    echo "compare_outputs: outputs DIFFER (or a grid run failed)"
    exit 1
fi
echo "compare_outputs: every output byte identical"
