/* SPDX-License-Identifier: BSD-3-Clause */
/* The SIMD tables of this build, white-box, for the tests that hold each one's kernels and entry
 * points to ref or to an oracle (test_exp2.c, test_tanh.c, test_kernel_tables.c, test_pack.c):
 * x86-64 builds have avx2 and avx512, aarch64 builds neon and sve, the latter once per vector length
 * compiled (sve128, sve256, sve512: only the one of this thread's length runs). Whether one runs here
 * is decided independently of the library (cpu_facts.h). */
#ifndef FA_TEST_SIMD_TABLES_H
#define FA_TEST_SIMD_TABLES_H

#include <stdint.h>

#include "kernels/kernels.h"

typedef struct {
    const char *name; /* avx2, avx512, neon, sve128, ... */
    const fa_kernels_f32 *f32;
    const fa_kernels_f64 *f64;
    void (*exp2_f32)(const float *x, float *y, int64_t n);
    void (*exp2_f64)(const double *x, double *y, int64_t n);
    void (*tanh_f32)(const float *x, float *y, int64_t n);
    void (*pack_f32)(int64_t rows, int64_t dim, const float *src, int64_t src_stride, float mult, float *dst,
                     int64_t ld);
    void (*pack_f64)(int64_t rows, int64_t dim, const double *src, int64_t src_stride, double mult,
                     double *dst, int64_t ld);
    double exp2_f32_tol; /* the documented relative error of exp2_f32 (exp2_poly.h: 1e-7 with the
                          * floor split's minimax polynomial, 2e-7 with Taylor's) */
} st_table;

extern const st_table st_tables[];
extern const int st_count;

/* Whether this CPU (and its SVE vector length) runs the table, and FA_TEST_SIMD, when set, names it
 * (a comma-separated list of st_table names): scripts/test.sh's emulated stage checks each table in
 * one run only (neon runs beside sve at every vector length). */
int st_runs(const st_table *t);

/* Whether the white-box suites check ref's own kernels too: FA_TEST_SIMD unset, or naming "ref". */
int st_ref_wanted(void);

/* The f32 kernel sets the white-box suites check, with their names: ref's (unless FA_TEST_SIMD
 * leaves it out), then every SIMD table of the build that this CPU runs. At most `max`; the count. */
typedef struct {
    const char *name;
    const fa_kernels_f32 *set;
} st_named_f32;
int st_f32_sets(st_named_f32 *out, int max);

/* Whether FA_TEST_SIMD is unset or names the kernel table `table` (a cf_tables name: "sve" is named
 * as the st_table of this thread's vector length, "sve256"): the tables a run of
 * test_kernel_tables.c compares with ref, so that the emulated stage checks each table once. */
int st_table_wanted(const char *table);

#endif
