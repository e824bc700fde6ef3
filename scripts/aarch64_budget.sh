#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/aarch64_budget.sh — the instruction budget of the aarch64 kernels, counted from their object
# code (src/README.md, "aarch64"): for each function named, every innermost loop of its disassembly
# (a backward branch to an address inside the function, with no other such loop inside it) and what
# one trip issues: instructions in all, FMAs (FMLA, FMAD...; and the bf16 dots BFDOT, BFMMLA, counted
# apart), other floating-point vector operations, loads, stores, predicate and integer/branch overhead.
#
#   scripts/aarch64_budget.sh OBJECT FUNCTION...       e.g.
#   scripts/aarch64_budget.sh build-arm/CMakeFiles/flashattn_objects.dir/src/kernels/sve/sve_f32_512.c.o \
#       online_softmax_lines_all_f32 scores_block_6_4_f32 rows_block_6_4_0_0_f32.constprop.0
#
# OBJDUMP (default aarch64-linux-gnu-objdump) disassembles.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: scripts/aarch64_budget.sh OBJECT FUNCTION..." >&2; exit 2; }
obj=$1
shift
objdump=${OBJDUMP:-aarch64-linux-gnu-objdump}
for fn in "$@"; do
    "$objdump" -d --no-show-raw-insn "$obj" | awk -v fn="$fn" '
        function hex(s,    v, i) { v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
        $0 ~ "^[0-9a-f]+ <" fn ">:$" { inside = 1; next }
        inside && /^[0-9a-f]+ <.*>:$/ { inside = 0 }
        inside && /^ +[0-9a-f]+:\t/ {
            split($0, f, "\t"); addr = hex(substr(f[1], 1, length(f[1]) - 1)); gsub(/ /, "", f[1]); addr = hex(substr(f[1], 1, length(f[1]) - 1))
            n++; at[n] = addr; op[n] = f[2]; arg[n] = f[3]
        }
        END {
            if (n == 0) { printf "%s: not found\n", fn; exit 1 }
            loops = 0
            for (i = 1; i <= n; i++) {
                if (op[i] !~ /^(b\.|cbn?z|tbn?z|b$)/) continue
                m = split(arg[i], a, /[ ,]+/); target = -1
                for (k = 1; k <= m; k++) if (a[k] ~ /^[0-9a-f]+$/ && length(a[k]) >= 3) target = hex(a[k])
                if (target >= at[i] || target < at[1]) continue
                for (j = 1; j <= n && at[j] != target; j++);
                loops++; lo[loops] = j; hi[loops] = i
            }
            for (l = 1; l <= loops; l++) {
                inner = 1
                for (o = 1; o <= loops; o++)
                    if (o != l && lo[o] >= lo[l] && hi[o] <= hi[l] && !(lo[o] == lo[l] && hi[o] == hi[l])) inner = 0
                if (!inner) continue
                total = fma = dot = fp = ld = st = other = 0
                for (i = lo[l]; i <= hi[l]; i++) {
                    total++
                    if (op[i] ~ /^(fmla|fmad|fmls|fmsb|fnmla|fnmls|fmlal)/) fma++
                    else if (op[i] ~ /^(bfdot|bfmmla|bfmlal)/) dot++
                    else if (op[i] ~ /^(ld|prf)/) ld++
                    else if (op[i] ~ /^st/) st++
                    else if (op[i] ~ /^(f|bfcvt|scvtf|ucvtf)/ || (arg[i] ~ /z[0-9]+\.|v[0-9]+\./ && op[i] !~ /^(movprfx|mov)$/)) fp++
                    else other++
                }
                printf "%s loop %x-%x: %d instructions: %d FMA, %s%d other vector, %d loads, %d stores, %d other\n",
                    fn, at[lo[l]], at[hi[l]], total, fma, dot ? dot " BFDOT/BFMMLA, " : "", fp, ld, st, other
            }
        }'
done
