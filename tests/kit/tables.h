/* SPDX-License-Identifier: BSD-3-Clause */
/* Which kernel tables (fa_stats.isa) multiply bf16 on dot-product units: AMX tiles, vdpbf16ps,
 * BFDOT of NEON and of SVE (include/flashattn.h, fa_forward "dtype" and fa_backward). On them an
 * all-bf16 call with even head dims (a forward: more than 4 query rows an item) rounds P (and the
 * backward dS) to bf16 and is held to the header's bound, 3 naive roundings of the exact result,
 * not bitwise to the widened call. One list for the suites and the benchmarks. */
#ifndef FA_KIT_TABLES_H
#define FA_KIT_TABLES_H

#include <string.h>

static inline int kit_table_multiplies_bf16(const char *isa)
{
    static const char *const dot_tables[] = {"amx", "avx512_bf16", "neon_bf16", "sve_bf16"};
    for (size_t i = 0; isa && i < sizeof dot_tables / sizeof *dot_tables; i++)
        if (strcmp(isa, dot_tables[i]) == 0) return 1;
    return 0;
}

#endif
