/* SPDX-License-Identifier: BSD-3-Clause */
/* Accuracy against the float64 oracle over a pairwise-covering grid of shapes.
 *
 * f64: normwise relative error max|x - ref| / max|ref| <= 1e-12 for out and for the finite lse;
 *      -inf lse must match exactly.
 * f32: max abs error of the library <= 2 · (max abs error of the naive f32 algorithm) + 1e-6,
 *      both measured against the f64 oracle on the same f32 inputs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "pairwise_grid.h"
#include "util.h"

/* ---- the grid ------------------------------------------------------------------------------
 * The pairwise-covering grid of pairwise_grid.h (OA(49, 8, 7, 2), shared with the backward's
 * accuracy suite); these are the forward's own values. Their order puts the long sequences against
 * the small head dims so the whole grid stays cheap. */

static const pg_levels levels = {
    .nq = {128, 1, 1023, 17, 203, 256, 113},
    .nk = {203, 17, 1, 256, 113, 128, 1023},
    .d = {256, 128, 64, 1, 8, 111, 59},
    .batch2_max_nq_nk = 20000,
};

Test(grid, covers_every_pair_of_axis_values)
{
    int a1 = 0, a2 = 0, l1 = 0, l2 = 0;
    cr_assert(pg_covers_every_pair(&a1, &a2, &l1, &l2), "axes %d and %d: value pair (%d, %d) is not covered",
              a1, a2, l1, l2);
}

/* Oracle work per case, in element products; bigger cases compare a sample of rows. */
#define ORACLE_BUDGET 3000000

static void check_row(fa_context *ctx, pg_row *g)
{
    tu_problem pr;
    tu_problem_make(&pr, &g->s, &g->rng, 2.5);
    char msg[512];

    fa_status st = fa_forward(ctx, &g->p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
    cr_expect_eq(st, FA_OK, "grid row %d (%s), seed %llu: status %d (%s)", g->row, g->desc,
                 (unsigned long long)g->seed, st, fa_status_str(st));
    if (st == FA_OK) {
        cr_expect(tu_problem_only_defined_written(&pr),
                  "grid row %d (%s), seed %llu: a byte outside the out view or lse was written", g->row,
                  g->desc, (unsigned long long)g->seed);
        int64_t *rows;
        int64_t n = tu_pick_rows(&pr, &g->p, ORACLE_BUDGET, &rows);
        int ok = tu_check_accuracy(&pr, &g->p, rows, n, 1e-12, msg, sizeof msg);
        cr_expect(ok, "grid row %d (%s), seed %llu, %lld rows compared: %s", g->row, g->desc,
                  (unsigned long long)g->seed, (long long)n, msg);
        free(rows);
    }
    tu_problem_free(&pr);
}

Test(accuracy, f64_matches_oracle_to_1e_12_over_pairwise_grid)
{
    pg_run(&levels, FA_F64, check_row);
}

Test(accuracy, f32_within_twice_naive_f32_error_over_pairwise_grid)
{
    pg_run(&levels, FA_F32, check_row);
}

/* D and Dv at the ends of their range, 1 and FA_MAX_HEAD_DIM, in every combination and both dtypes,
 * and DeepSeek's MLA dims (576 over 512: one latent cache, the values its first 512 dims). */
Test(accuracy, head_dims_at_limits_1_and_the_max_match_oracle)
{
    uint64_t seed = tu_test_seed();
    enum { M = FA_MAX_HEAD_DIM };
    static const int64_t dims[][2] = {{M, M}, {1, M}, {M, 1}, {1, 1}, {576, 512}};
    int c = 0;
    for (int t = 0; t < 2; t++)
        for (int x = 0; x < 5; x++, c++) {
            tu_shape s = {t ? FA_F64 : FA_F32, 1, 2, 1, 33, 47, dims[x][0], dims[x][1], (tu_layout)(c % 3)};
            fa_params p = FA_PARAMS_INIT;
            p.causal = pg_causal_levels[c % 3];
            tu_rng rng = tu_rng_make(seed + (uint64_t)c);
            tu_problem pr;
            tu_problem_make(&pr, &s, &rng, 1.0);
            char desc[256], msg[512];
            tu_shape_str(&s, &p, desc, sizeof desc);
            fa_status st = fa_forward(NULL, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
            cr_expect_eq(st, FA_OK, "%s, seed %llu: status %d", desc, (unsigned long long)seed, st);
            if (st == FA_OK) {
                int64_t *rows;
                int64_t n = tu_pick_rows(&pr, &p, INT64_MAX, &rows);
                cr_expect(tu_check_accuracy(&pr, &p, rows, n, 1e-12, msg, sizeof msg), "%s, seed %llu: %s",
                          desc, (unsigned long long)seed, msg);
                free(rows);
            }
            tu_problem_free(&pr);
        }
}

/* Inputs may broadcast with a stride of 0: one K and V shared by every batch, and one q row
 * repeated over the sequence. Also a negative (finite) scale is valid. */
Test(accuracy, zero_stride_broadcast_inputs_and_negative_scale_match_oracle)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++) {
        fa_dtype dt = t ? FA_F64 : FA_F32;
        tu_shape s = {dt, 3, 4, 2, 40, 50, 24, 16, TU_BHSD};
        tu_rng rng = tu_rng_make(seed + (uint64_t)t);
        tu_problem pr;
        tu_problem_make(&pr, &s, &rng, 2.0);
        pr.k.stride_batch = 0; /* every batch reads batch 0's k and v */
        pr.v.stride_batch = 0;
        fa_params p = FA_PARAMS_INIT;
        p.causal = t ? FA_CAUSAL_BOTTOM_RIGHT : FA_CAUSAL_TOP_LEFT;
        p.scale = -0.3;
        char desc[256], msg[512];
        tu_shape_str(&s, &p, desc, sizeof desc);
        fa_status st = fa_forward(NULL, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
        cr_expect_eq(st, FA_OK, "%s (k, v stride_batch 0), seed %llu: status %d", desc,
                     (unsigned long long)seed, st);
        int64_t *rows;
        int64_t n = tu_pick_rows(&pr, &p, INT64_MAX, &rows);
        if (st == FA_OK)
            cr_expect(tu_check_accuracy(&pr, &p, rows, n, 1e-12, msg, sizeof msg), "%s, seed %llu: %s", desc,
                      (unsigned long long)seed, msg);

        /* q broadcast along the sequence: every query row is row 0. */
        pr.q.stride_seq = 0;
        tu_problem_fill_canary(&pr);
        st = fa_forward(NULL, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
        cr_expect_eq(st, FA_OK, "%s (q stride_seq 0), seed %llu: status %d", desc, (unsigned long long)seed,
                     st);
        if (st == FA_OK)
            cr_expect(tu_check_accuracy(&pr, &p, rows, n, 1e-12, msg, sizeof msg),
                      "%s (q stride_seq 0), seed %llu: %s", desc, (unsigned long long)seed, msg);
        free(rows);
        tu_problem_free(&pr);
    }
}

/* Each tensor with its own layout: q contiguous [B][H][S][D], k [B][S][H][D], v a slice of a
 * packed QKV buffer, out [B][S][H][Dv] with padding. Nothing may assume two views share strides. */
Test(accuracy, mixed_layouts_per_tensor_match_oracle)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 3; c++) {
            fa_dtype dt = t ? FA_F64 : FA_F32;
            tu_shape s = {dt, 3, 6, 3, 45, 70, 20, 28, TU_BHSD};
            tu_problem by_layout[3];
            for (int l = 0; l < 3; l++) {
                s.layout = (tu_layout)l;
                tu_rng rng = tu_rng_make(seed + (uint64_t)(10 * t + l));
                tu_problem_make(&by_layout[l], &s, &rng, 2.0);
            }
            tu_problem mix = by_layout[TU_PACKED]; /* its out (padded) and lse */
            mix.q = by_layout[TU_BHSD].q;
            mix.k = by_layout[TU_BSHD].k;
            fa_params p = FA_PARAMS_INIT;
            p.causal = (fa_causal)c;
            char desc[256], msg[512];
            tu_shape_str(&mix.shape, &p, desc, sizeof desc);
            fa_status st = fa_forward(NULL, &p, &mix.q, &mix.k, &mix.v, &mix.out, mix.lse);
            cr_expect_eq(st, FA_OK, "%s (q bhsd, k bshd, v packed), seed %llu: status %d", desc,
                         (unsigned long long)seed, st);
            if (st == FA_OK) {
                cr_expect(tu_problem_only_defined_written(&mix), "%s, seed %llu: wrote outside out/lse", desc,
                          (unsigned long long)seed);
                int64_t *rows;
                int64_t n = tu_pick_rows(&mix, &p, INT64_MAX, &rows);
                cr_expect(tu_check_accuracy(&mix, &p, rows, n, 1e-12, msg, sizeof msg),
                          "%s (q bhsd, k bshd, v packed), seed %llu: %s", desc, (unsigned long long)seed,
                          msg);
                free(rows);
            }
            for (int l = 0; l < 3; l++) tu_problem_free(&by_layout[l]);
        }
}
