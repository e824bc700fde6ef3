/* SPDX-License-Identifier: BSD-3-Clause */
/* Every kernel table against the portable one and the oracle.
 *
 * The tables (ref, avx2, avx512) share one contract (src/kernels/kernels.h); a table is chosen per
 * context, here forced with FLASHATTN_ISA around fa_context_create. On each table this CPU runs,
 * forward and backward must meet the oracle rules of the main grids and agree with the ref
 * table's results within the same bounds, on shapes that put every residue at the edge of a
 * vector (D, Dv around multiples of 8 and 16 elements) and of a tile (N around the block sizes).
 * A table the CPU lacks must be refused with FA_ERR_UNSUPPORTED, never replaced. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashattn.h"
#include "util.h"
#include "util_backward.h"

static const char *const tables[] = {"ref", "avx2", "avx512"};
#define N_TABLES 3

/* Decided from cpuid here, independently of the library's own check. */
static int cpu_runs(const char *table)
{
    if (strcmp(table, "ref") == 0) return 1;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (strcmp(table, "avx512") == 0) return __builtin_cpu_supports("avx512f");
    if (strcmp(table, "avx2") == 0) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return 0;
}

/* A context on `table`; the caller's FLASHATTN_ISA is put back afterwards. */
static fa_status context_on(const char *table, int block_q, int block_k, fa_context **ctx)
{
    const char *old = getenv("FLASHATTN_ISA");
    char saved[32] = "";
    int had = old != NULL;
    if (had) snprintf(saved, sizeof saved, "%s", old);
    setenv("FLASHATTN_ISA", table, 1);
    fa_context_opts o = fa_context_opts_default();
    o.block_q = block_q;
    o.block_k = block_k;
    o.num_threads = 2;
    fa_status st = fa_context_create(ctx, &o);
    if (had) setenv("FLASHATTN_ISA", saved, 1);
    else unsetenv("FLASHATTN_ISA");
    return st;
}

Test(kernel_tables, each_table_is_used_where_the_cpu_runs_it_and_refused_elsewhere)
{
    for (int t = 0; t < N_TABLES; t++) {
        fa_context *ctx = NULL;
        fa_status st = context_on(tables[t], 0, 0, &ctx);
        if (!cpu_runs(tables[t])) {
            cr_expect_eq(st, FA_ERR_UNSUPPORTED, "table %s: this CPU lacks it, status %s", tables[t],
                         fa_status_str(st));
            /* the diagnostic names the variable and says it is the CPU, not the build, that lacks it */
            cr_expect(strstr(fa_last_error(), "FLASHATTN_ISA=") && strstr(fa_last_error(), "this CPU"), "\"%s\"",
                      fa_last_error());
            continue;
        }
        cr_assert_eq(st, FA_OK, "table %s: %s", tables[t], fa_status_str(st));
        fa_stats s;
        cr_assert_eq(fa_context_stats(ctx, &s), FA_OK);
        cr_expect_str_eq(s.isa, tables[t]);
        fa_context_destroy(ctx);
    }
    fa_context *ctx = NULL;
    cr_expect_eq(context_on("sse9", 0, 0, &ctx), FA_ERR_ARG, "an unknown table name is an argument error");
    cr_expect_str_eq(fa_last_error(), "fa_context_create: FLASHATTN_ISA=sse9: expected ref, avx2, avx512 or auto");
    /* "auto" is the automatic choice, as if the variable were unset */
    cr_assert_eq(context_on("auto", 0, 0, &ctx), FA_OK, "%s", fa_last_error());
    fa_stats s;
    cr_assert_eq(fa_context_stats(ctx, &s), FA_OK);
    const char *best = "ref";
    for (int t = 0; t < N_TABLES; t++)
        if (cpu_runs(tables[t])) best = tables[t];
    cr_expect_str_eq(s.isa, best, "FLASHATTN_ISA=auto picks the best table this CPU runs");
    fa_context_destroy(ctx);
}

/* Residues: dims at 1, 7/8/9 (f64 vector of 8), 15/16/17 (f32 vector of 16), 33, 64;
 * lengths around the blocks; blocks 16/16 (whole vectors), 5/7 (odd), 17/33, and automatic. */
static const int64_t dims[] = {1, 7, 8, 9, 15, 16, 17, 33, 64};
static const int64_t dims_v[] = {1, 9, 16, 17, 31};
static const int64_t lens[] = {1, 7, 16, 17, 40};
static const int blocks[][2] = {{16, 16}, {5, 7}, {17, 33}, {0, 0}};
#define N_CASES 18

static void case_shape(int c, fa_dtype dtype, tu_shape *s, fa_params *p, int *bq, int *bk)
{
    /* strides through the value lists chosen so that the cases spread over every value of each */
    s->dtype = dtype;
    s->batch = 1 + c % 2;
    s->q_heads = 2;
    s->kv_heads = c % 3 == 0 ? 2 : 1;
    s->q_len = lens[c % 5];
    s->kv_len = lens[(c * 3 + 1) % 5];
    s->dim = dims[c % 9];
    s->dim_v = dims_v[(c * 2 + 1) % 5];
    s->layout = (tu_layout)(c % 3);
    *p = fa_params_default();
    p->causal = (fa_causal)(c % 3);
    *bq = blocks[c % 4][0];
    *bk = blocks[c % 4][1];
}

/* Largest |x - y| over two equally shaped views, and the largest |y|. */
static void view_diff(const fa_tensor *x, const double *y, double *err, double *scale)
{
    tub_err e = tub_compare_view(x, y, NULL);
    *err = e.mismatches ? INFINITY : e.max_err;
    *scale = e.max_ref;
}

static void check_dtype(fa_dtype dtype)
{
    uint64_t seed = tu_test_part_seed(dtype == FA_F64 ? "f64" : "f32");
    for (int c = 0; c < N_CASES; c++) {
        tu_shape s;
        fa_params p;
        int bq, bk;
        case_shape(c, dtype, &s, &p, &bq, &bk);
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tub_problem bp;
        tub_make(&bp, &s, &rng, 2.0);
        tub_ref oracle, naive;
        tub_ref_compute(&oracle, &bp, &p);
        if (dtype == FA_F32) tub_ref_compute_naive_f32(&naive, &bp, &p);
        int64_t *rows;
        int64_t n_rows = tu_pick_rows(&bp.fw, &p, 1 << 30, &rows);
        char desc[256], msg[512];
        tub_desc(&bp, &p, bq, bk, desc, sizeof desc);

        double *ref_table[4] = {NULL, NULL, NULL, NULL}; /* ref table's out, dq, dk, dv */
        for (int t = 0; t < N_TABLES; t++) {
            if (!cpu_runs(tables[t])) continue;
            fa_context *ctx;
            cr_assert_eq(context_on(tables[t], bq, bk, &ctx), FA_OK, "%s on %s", desc, tables[t]);
            cr_assert_eq(tub_forward(ctx, &p, &bp), FA_OK, "%s on %s", desc, tables[t]);
            cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s on %s", desc, tables[t]);
            fa_context_destroy(ctx);

            cr_expect(tu_check_accuracy(&bp.fw, &p, rows, n_rows, 1e-12, msg, sizeof msg),
                      "table %s, %s, seed %llu: forward %s", tables[t], desc, (unsigned long long)seed, msg);
            cr_expect(tub_check_accuracy(&bp, &p, &oracle, dtype == FA_F32 ? &naive : NULL, 1e-11, msg, sizeof msg),
                      "table %s, %s, seed %llu: backward %s", tables[t], desc, (unsigned long long)seed, msg);

            const fa_tensor *got[4] = {&bp.fw.out, &bp.grad[0], &bp.grad[1], &bp.grad[2]};
            if (t == 0) {
                for (int g = 0; g < 4; g++) ref_table[g] = tub_view_copy(got[g]);
                continue;
            }
            /* Directly against the ref table: within what the oracle rule allows either of them. */
            for (int g = 0; g < 4; g++) {
                double err, size;
                view_diff(got[g], ref_table[g], &err, &size);
                double allowed;
                if (dtype == FA_F64) {
                    /* Relative to the result's size; for gradients at least 1e-4 of their a-priori
                     * bound, as in the backward rule: where the exact gradient is 0 (a row seeing one
                     * key) both tables hold only rounding noise of order eps times that bound. */
                    double bound[3];
                    tub_grad_bounds(&bp, &p, bound);
                    double floor = g == 0 ? 1e-300 : 1e-4 * bound[g - 1];
                    allowed = 2e-12 * (size > floor ? size : floor);
                } else {
                    double naive_err;
                    if (g == 0) {
                        tu_ref nf, of;
                        tu_ref_compute_naive_f32(&nf, &bp.fw, &p, rows, n_rows);
                        tu_ref_compute(&of, &bp.fw, &p, rows, n_rows);
                        naive_err = tu_compare_ref_out(&nf, &of).max_err;
                        tu_ref_free(&nf);
                        tu_ref_free(&of);
                    } else {
                        int64_t n = tub_numel(got[g]);
                        naive_err = tub_compare_arrays(naive.grad[g - 1], oracle.grad[g - 1], n, NULL).max_err;
                    }
                    allowed = 4.0 * naive_err + (g == 0 ? 2e-6 : 2e-5);
                }
                static const char *const names[4] = {"out", "dq", "dk", "dv"};
                cr_expect(err <= allowed, "table %s vs ref, %s, seed %llu: %s differs by %.3g > %.3g", tables[t],
                          desc, (unsigned long long)seed, names[g], err, allowed);
            }
        }
        for (int g = 0; g < 4; g++) free(ref_table[g]);
        free(rows);
        tub_ref_free(&oracle);
        if (dtype == FA_F32) tub_ref_free(&naive);
        tub_free(&bp);
    }
}

Test(kernel_tables, f64_every_table_matches_ref_table_and_oracle_at_every_edge_residue)
{
    check_dtype(FA_F64);
}

Test(kernel_tables, f32_every_table_matches_ref_table_and_oracle_at_every_edge_residue)
{
    check_dtype(FA_F32);
}
