/* SPDX-License-Identifier: BSD-3-Clause */
/* The SIMD tables of this build; see simd_tables.h. */
#include "simd_tables.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_facts.h"

#if defined(__x86_64__)
#include "kernels/avx2/avx2.h"
#include "kernels/avx2/avx2_pack.h"
#include "kernels/avx512/avx512.h"
#include "kernels/avx512/avx512_pack.h"
const st_table st_tables[] = {
    {"avx2", &fa_avx2_kernels_f32, &fa_avx2_kernels_f64, fa_avx2_exp2_f32, fa_avx2_exp2_f64, fa_avx2_tanh_f32,
     fa_avx2_pack_transposed_f32, fa_avx2_pack_transposed_f64, 2e-7},
    {"avx512", &fa_avx512_kernels_f32, &fa_avx512_kernels_f64, fa_avx512_exp2_f32, fa_avx512_exp2_f64,
     fa_avx512_tanh_f32, fa_avx512_pack_transposed_f32, fa_avx512_pack_transposed_f64, 1e-7},
};
const int st_count = 2;
#elif defined(__aarch64__)
#include "kernels/neon/neon.h"
#include "kernels/sve/sve.h"
#define ST_SVE(bits)                                                                                    \
    {                                                                                                   \
        "sve" #bits, &fa_sve##bits##_kernels_f32, &fa_sve##bits##_kernels_f64, fa_sve##bits##_exp2_f32, \
            fa_sve##bits##_exp2_f64, fa_sve##bits##_tanh_f32, fa_sve##bits##_pack_transposed_f32,       \
            fa_sve##bits##_pack_transposed_f64, 1e-7                                                    \
    }
const st_table st_tables[] = {
    {"neon", &fa_neon_kernels_f32, &fa_neon_kernels_f64, fa_neon_exp2_f32, fa_neon_exp2_f64, fa_neon_tanh_f32,
     fa_neon_pack_transposed_f32, fa_neon_pack_transposed_f64, 1e-7},
    ST_SVE(128),
    ST_SVE(256),
    ST_SVE(512),
    ST_SVE(1024),
    ST_SVE(2048),
};
const int st_count = 6;
#else
const st_table st_tables[1] = {{0}};
const int st_count = 0;
#endif

/* Whether FA_TEST_SIMD is unset or lists `name`. */
static int named(const char *name)
{
    const char *only = getenv("FA_TEST_SIMD");
    if (!only || !*only) return 1;
    size_t n = strlen(name);
    for (const char *at = only; (at = strstr(at, name)) != NULL; at += n)
        if ((at == only || at[-1] == ',') && (at[n] == '\0' || at[n] == ',')) return 1;
    return 0;
}

int st_ref_wanted(void)
{
    return named("ref");
}

int st_f32_sets(st_named_f32 *out, int max)
{
    int n = 0;
    if (st_ref_wanted() && n < max) out[n++] = (st_named_f32){"ref", fa_kernels_ref.f32};
    for (int t = 0; t < st_count && n < max; t++)
        if (st_runs(&st_tables[t])) out[n++] = (st_named_f32){st_tables[t].name, st_tables[t].f32};
    return n;
}

int st_table_wanted(const char *table)
{
    if (strcmp(table, "sve") != 0) return named(table);
    char sve[16];
    snprintf(sve, sizeof sve, "sve%d", cf_sve_bits());
    return named(sve);
}

int st_runs(const st_table *t)
{
    if (!named(t->name)) return 0;
    if (strncmp(t->name, "sve", 3) == 0 && t->name[3])
        return cf_table_runs("sve") && cf_sve_bits() == (int)strtol(t->name + 3, NULL, 10);
    return cf_table_runs(t->name);
}
