#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/mutants.sh — does the suite kill deliberate one-line faults in src/? (not a CI stage)
#
#   scripts/mutants.sh [OPTIONS] [CHECKOUT]
#
# CHECKOUT (default: the repository holding this script) is copied (its tracked and untracked,
# not ignored files) into a scratch tree, WORK/tree; the checkout itself is never modified. For each
# row of the table (CHECKOUT/tests/mutants.txt, else this script's own) the script puts the row's
# fault into the scratch copy of its file (the original fragment must occur exactly once), builds
# fa-tests and fa-fuzz-replay in WORK/build (incremental: only what includes that file recompiles),
# runs the suite at each OMP_NUM_THREADS of the row, cheapest first: `fa-tests --fail-fast -j2
# --filter=F` for each of the row's hints F (the tests likeliest to kill it; a hint that names no test,
# as after the suite is reshaped, runs nothing), the fuzz seeds (tests/fuzz/corpus, which
# scripts/test.sh's suite stages replay), then the whole `fa-tests --fail-fast -j2`; it stops at the
# first failure and puts the file back.
# A mutant is killed when a run fails (or crashes, or exceeds --timeout); one that does not apply or
# does not compile is an error of the table, never a kill. First the unmodified tree is built and
# must pass, or nothing a mutant does would mean anything.
#
# Options:
#   --table FILE      the mutant table (format: the comment at the top of tests/mutants.txt)
#   --only ID[,ID..]  run only these mutants (or categories: --only mask,rescale)
#   --check           only check that every row applies exactly once; build and run nothing
#   --work DIR        scratch tree, build and results (default CHECKOUT/build-mutants; kept between
#                     runs so that a second run builds incrementally)
#   --timeout S       seconds for one fa-tests or replay run (default 900); past it: killed (timeout)
#   --skip-baseline   do not build and run the unmodified tree first (it must pass; --only runs trust it)
#   --no-hints        ignore the rows' hints (the table's 8th field) and run the whole suite at once
#   --hints-from FILE rewrite the table's hints from a results.tsv of an earlier run (each killed row's
#                     hint becomes its killer's suite, suite/*), then exit: after the suite is renamed
#                     or reshaped, one slow run with the old hints and this make the next runs fast
# Environment: FA_JOBS (build jobs, default 2), FA_TEST_SEED (passed to the suite as set).
#
# Prints a table (id, category, file:line, result, killed by, threads, build and test seconds) and
# writes it to WORK/results.tsv and WORK/results.md; logs of each run in WORK/logs/. Exit status: 0
# every mutant killed, 1 some survived, 2 an error of the table or the tree (a row that does not
# apply or compile, a baseline that fails).
#
# Time: mostly builds and the whole-suite runs of survivors. A fault in src/kernels/simd/ recompiles
# every SIMD table (2-4 minutes on 2 loaded cores, and as long again to put it back); one in a driver
# or src/plan/ a few seconds. Each killed mutant's tests take seconds; a survivor costs the whole
# suite (about 3 minutes at OMP_NUM_THREADS=3) per thread count of its row. The baseline runs the
# whole suite at every thread count the table names.
set -euo pipefail

script_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
table="" only="" check_only=0 work="" timeout_s=900 baseline=1 hints=1 hints_from="" checkout=""
while [ $# -gt 0 ]; do
    case $1 in
    --table) table=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --check) check_only=1; shift ;;
    --work) work=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --skip-baseline) baseline=0; shift ;;
    --no-hints) hints=0; shift ;;
    --hints-from) hints_from=$2; shift 2 ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "mutants.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) [ -z "$checkout" ] || { echo "mutants.sh: one checkout only" >&2; exit 2; }; checkout=$1; shift ;;
    esac
done
checkout=$(cd "${checkout:-$script_root}" && pwd)
[ -f "$checkout/CMakeLists.txt" ] && [ -d "$checkout/src" ] || {
    echo "mutants.sh: $checkout is not a flashattn checkout" >&2
    exit 2
}
if [ -z "$table" ]; then
    table=$checkout/tests/mutants.txt
    [ -f "$table" ] || table=$script_root/tests/mutants.txt
fi
[ -f "$table" ] || { echo "mutants.sh: no table $table" >&2; exit 2; }
table=$(cd "$(dirname "$table")" && pwd)/$(basename "$table")
work=${work:-$checkout/build-mutants}
mkdir -p "$work"
work=$(cd "$work" && pwd)
tree=$work/tree build=$work/build logs=$work/logs
jobs=${FA_JOBS:-2}
python=$(command -v python3) || { echo "mutants.sh: needs python3 (literal edits)" >&2; exit 2; }

# The literal edits, in Python so that no fragment is ever read as a pattern.
#   locate FILE ORIG           prints "COUNT LINE" (LINE of the first occurrence, 1-based)
#   apply FILE ORIG REPL       replaces the only occurrence; exit 3 unless exactly one
#   sync SRC DST               DST becomes SRC's tracked and untracked, not ignored files: copies
#                              (fresh mtime, so the build sees them) only those that differ, removes
#                              the others (a test file deleted in SRC must leave the suite)
edit() {
    "$python" - "$@" <<'EOF'
import os, subprocess, sys, shutil
cmd = sys.argv[1]
if cmd in ("locate", "apply"):
    path, orig = sys.argv[2], sys.argv[3]
    text = open(path, encoding="utf-8").read()
    n = text.count(orig)
    if cmd == "locate":
        line = text[: text.find(orig)].count("\n") + 1 if n else 0
        print(n, line)
        sys.exit(0)
    if n != 1:
        sys.exit(3)
    repl = sys.argv[4]
    out = text.replace(orig, repl, 1)
    if out == text:
        sys.exit(4)
    tmp = path + ".mutant-tmp"
    open(tmp, "w", encoding="utf-8").write(out)
    os.replace(tmp, path)
elif cmd == "sync":
    src, dst = sys.argv[2], sys.argv[3]
    files = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           check=True, capture_output=True).stdout.decode().split("\0")
    keep = set(f for f in files if f and os.path.isfile(os.path.join(src, f)))
    copied = 0
    for f in sorted(keep):
        s, d = os.path.join(src, f), os.path.join(dst, f)
        try:
            with open(s, "rb") as a, open(d, "rb") as b:
                if a.read() == b.read():
                    continue
        except FileNotFoundError:
            pass
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copyfile(s, d)
        shutil.copymode(s, d)
        copied += 1
    removed = 0
    for root, dirs, names in os.walk(dst):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), dst)
            if rel not in keep:
                os.remove(os.path.join(root, n))
                removed += 1
    print(f"scratch tree: {len(keep)} files, {copied} copied, {removed} removed")
EOF
}

if [ -n "$hints_from" ]; then
    "$python" - "$table" "$hints_from" <<'EOF'
import re, sys
table, results = sys.argv[1], sys.argv[2]
killer = {}
for line in open(results, encoding="utf-8").read().splitlines()[1:]:
    f = line.split("\t")
    m = re.match(r"([A-Za-z0-9_]+)/", f[4]) if len(f) > 4 and f[3] == "killed" else None
    if m:
        killer[f[0]] = m.group(1) + "/*"
out, changed = [], 0
for line in open(table, encoding="utf-8").read().splitlines():
    f = line.split("\t")
    if line.startswith("#") or len(f) < 7 or f[0] not in killer:
        out.append(line)
        continue
    f = f[:7] + [killer[f[0]]]
    changed += "\t".join(f) != line
    out.append("\t".join(f))
open(table, "w", encoding="utf-8").write("\n".join(out) + "\n")
print(f"mutants.sh: {changed} hints rewritten in {table} from {results}")
EOF
    exit $?
fi

# The table: id, category, threads (OMP_NUM_THREADS values, comma-separated), file, original
# fragment, replacement, reason, and optionally hints (Criterion filters, space-separated);
# tab-separated; '#' lines and blank lines are comments.
ids=() cats=() thrs=() files=() origs=() repls=() reasons=() firsts=()
while IFS= read -r line || [ -n "$line" ]; do
    case $line in '' | '#'*) continue ;; esac
    IFS=$'\t' read -r -a f <<<"$line"
    if [ "${#f[@]}" -ne 7 ] && [ "${#f[@]}" -ne 8 ]; then
        echo "mutants.sh: $table: a row of ${#f[@]} fields, not 7 or 8: $line" >&2
        exit 2
    fi
    if [ -n "$only" ] && ! [[ ",$only," == *",${f[0]},"* || ",$only," == *",${f[1]},"* ]]; then continue; fi
    ids+=("${f[0]}") cats+=("${f[1]}") thrs+=("${f[2]}") files+=("${f[3]}") origs+=("${f[4]}")
    repls+=("${f[5]}") reasons+=("${f[6]}") firsts+=("${f[7]:-}")
done <"$table"
[ "${#ids[@]}" -gt 0 ] || { echo "mutants.sh: no mutant selected from $table" >&2; exit 2; }

# Every row must apply to the checkout: its file exists and holds the fragment exactly once.
lines=() bad=0
declare -A seen_id=()
for i in "${!ids[@]}"; do
    [ -z "${seen_id[${ids[$i]}]:-}" ] || { echo "mutants.sh: id ${ids[$i]} twice" >&2; bad=1; }
    seen_id[${ids[$i]}]=1
    src=$checkout/${files[$i]}
    if [ ! -f "$src" ]; then
        echo "mutants.sh: ${ids[$i]}: no file ${files[$i]}" >&2
        lines+=(0) bad=1
        continue
    fi
    read -r count at < <(edit locate "$src" "${origs[$i]}")
    lines+=("$at")
    if [ "$count" != 1 ]; then
        echo "mutants.sh: ${ids[$i]}: the original fragment occurs $count times in ${files[$i]}" >&2
        bad=1
    fi
done
if [ "$check_only" = 1 ]; then
    [ "$bad" = 0 ] && echo "mutants.sh: all ${#ids[@]} rows apply exactly once to $checkout"
    exit $((bad * 2))
fi
[ "$bad" = 0 ] || { echo "mutants.sh: fix the table first (rows above)" >&2; exit 2; }

mkdir -p "$tree" "$logs"
edit sync "$checkout" "$tree"

# Whatever happens (Ctrl-C included), the scratch file a mutant changed is put back.
mutated=""
restore() {
    if [ -n "$mutated" ]; then
        cp "$checkout/$mutated" "$tree/$mutated"
        mutated=""
    fi
}
trap 'restore' EXIT
trap 'restore; echo "mutants.sh: interrupted; the scratch tree is restored" >&2; exit 130' INT TERM

generator=()
command -v ninja >/dev/null && [ ! -f "$build/Makefile" ] && generator=(-G Ninja)
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

echo "mutants.sh: checkout $checkout ($(git -C "$checkout" rev-parse --short HEAD 2>/dev/null || echo '?'))," \
    "table $table, ${#ids[@]} mutants, work $work"
cmake -S "$tree" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g" -DFLASHATTN_WERROR=ON -DFLASHATTN_BUILD_TESTS=ON \
    -DFLASHATTN_BUILD_BENCH=OFF -DFLASHATTN_MPI=OFF -DFLASHATTN_PYTHON=OFF >"$logs/configure.log" 2>&1 ||
    { echo "mutants.sh: cmake failed: $logs/configure.log" >&2; exit 2; }
targets=(fa-tests)
grep -qs fa-fuzz-replay "$tree/tests/fuzz/CMakeLists.txt" && targets+=(fa-fuzz-replay)

build_targets() { cmake --build "$build" -j "$jobs" --target "${targets[@]}"; }
exe() { find "$build" -name "$1" -type f -perm -u+x -print -quit; } # wherever the suite's CMake puts it

killer="" # what killed the last mutant: the first failing test, the replay, or a timeout
run_once() { # run_once LOG THREADS tests|fuzz [FILTER]: 0 passed, 1 failed (then $killer says what)
    local log=$1 n=$2 which=$3 rc=0
    if [ "$which" = tests ]; then
        { OMP_NUM_THREADS=$n timeout -k 10 "$timeout_s" "$(exe fa-tests)" --fail-fast -j2 ${4:+"$4"} \
            >"$log" 2>&1; } 2>/dev/null || rc=$?
        [ "$rc" != 0 ] || return 0
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            killer="timeout (fa-tests, $n threads, ${timeout_s} s)"
            return 1
        fi
        killer=$(grep -m1 -oE '\[FAIL\] [^ :]+::[^ :]+' "$log" | sed 's/\[FAIL\] //; s/::/\//') || true
        [ -n "$killer" ] || killer=$(grep -m1 -oE 'test `[^`]+` crashed' "$log" | sed 's/test `//; s/` crashed/ (crash)/; s/::/\//') || true
        [ -n "$killer" ] || killer="fa-tests rc=$rc"
        killer="$killer ($n threads)"
        return 1
    fi
    [ "${#targets[@]}" = 2 ] || return 0
    { OMP_NUM_THREADS=$n timeout -k 10 "$timeout_s" "$(exe fa-fuzz-replay)" "$tree/tests/fuzz/corpus" \
        >"$log" 2>&1; } 2>/dev/null || rc=$? # no "Aborted" from the shell: the replay aborts on a failed check
    [ "$rc" != 0 ] || return 0
    local where
    where=$(grep -m1 -oE '^[a-z_]+\.c:[0-9]+: check failed' "$log" | sed 's/: check failed//') || true
    killer="fuzz seed replay${where:+ ($where)} rc=$rc ($n threads)"
    [ "$rc" != 124 ] && [ "$rc" != 137 ] || killer="timeout (fuzz replay, $n threads)"
    return 1
}
run_suite() { # run_suite LOGPREFIX THREADS,.. HINTS: cheap runs first, at every thread count
    local prefix=$1 n h k=0
    if [ "$hints" = 1 ]; then
        for n in ${2//,/ }; do
            for h in $3; do
                k=$((k + 1))
                run_once "$prefix.first$k.$n.log" "$n" tests "--filter=$h" || return 1
            done
        done
    fi
    for n in ${2//,/ }; do run_once "$prefix.fuzz.$n.log" "$n" fuzz || return 1; done
    for n in ${2//,/ }; do run_once "$prefix.tests.$n.log" "$n" tests || return 1; done
    return 0
}

if [ "$baseline" = 1 ]; then
    t0=$(now)
    build_targets >"$logs/baseline.build.log" 2>&1 ||
        { echo "mutants.sh: the unmodified tree does not build: $logs/baseline.build.log" >&2; exit 2; }
    echo "baseline: built in $(since "$t0") s"
    t0=$(now)
    all_threads=$(printf '%s\n' "${thrs[@]//,/$'\n'}" | sort -nu | paste -sd, -)
    if ! run_suite "$logs/baseline" "$all_threads" ""; then
        echo "mutants.sh: the unmodified suite fails ($killer): logs in $logs/baseline.*" >&2
        exit 2
    fi
    echo "baseline: the fuzz seeds and fa-tests pass at OMP_NUM_THREADS $all_threads in $(since "$t0") s"
fi

results=$work/results.tsv
printf 'id\tcategory\tfile:line\tresult\tkilled by\tthreads\tbuild s\ttest s\n' >"$results"
survived=0 errors=0 t_all=$(now)
for i in "${!ids[@]}"; do
    id=${ids[$i]} file=${files[$i]}
    mutated=$file
    edit apply "$tree/$file" "${origs[$i]}" "${repls[$i]}" || {
        echo "mutants.sh: $id: did not apply to the scratch tree" >&2
        restore
        exit 2
    }
    t0=$(now)
    result="" killer="" tb="" tt="-"
    if ! build_targets >"$logs/$id.build.log" 2>&1; then
        result=ERROR
        killer="does not compile: $(grep -m1 -E ': error: ' "$logs/$id.build.log" | sed 's|^.*/tree/||' | cut -c1-140)"
        tb=$(since "$t0")
        errors=$((errors + 1))
    else
        tb=$(since "$t0")
        t0=$(now)
        if run_suite "$logs/$id" "${thrs[$i]}" "${firsts[$i]}"; then
            result=SURVIVED killer="-"
            survived=$((survived + 1))
        else
            result=killed
        fi
        tt=$(since "$t0")
    fi
    restore
    printf '%s\t%s\t%s:%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "${cats[$i]}" "$file" "${lines[$i]}" "$result" "$killer" \
        "${thrs[$i]}" "$tb" "$tt" | tee -a "$results"
done
# put back what the last mutant's build compiled, so the next run starts from the unmodified tree
build_targets >"$logs/restore.build.log" 2>&1 || true

{
    echo "| id | category | file:line | result | killed by | threads | build s | test s |"
    echo "|---|---|---|---|---|---|---|---|"
    tail -n +2 "$results" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
} >"$work/results.md"
echo
column -t -s $'\t' "$results" 2>/dev/null || cat "$results"
echo
echo "mutants.sh: ${#ids[@]} mutants: $((${#ids[@]} - survived - errors)) killed, $survived survived," \
    "$errors errors, in $(since "$t_all") s; $results, $work/results.md"
[ "$errors" = 0 ] || exit 2
[ "$survived" = 0 ] || exit 1
exit 0
