/* SPDX-License-Identifier: BSD-3-Clause */
/* Accuracy against the float64 oracles over a pairwise-covering grid of shapes, forward and
 * backward (the backward's out and lse come from fa_forward on the same context).
 *
 * Forward (tu_check_accuracy):
 * f64: normwise relative error max|x - ref| / max|ref| <= 1e-12 for out and for the finite lse;
 *      -inf lse must match exactly.
 * f32: max abs error of the library <= 2 · (max abs error of the naive f32 algorithm) + 1e-6,
 *      both measured against the f64 oracle on the same f32 inputs.
 * Backward, per gradient tensor (dq, dk, dv), every value finite and (tub_check_accuracy):
 * f64: normwise relative error max|x - ref| / max|ref| <= 1e-11, the norm floored at 1e-4 of an
 *      a-priori bound on the tensor (only matters where the exact gradient is zero, e.g. Nq = 1
 *      under a causal mask: one visible key, P = 1, dS = 0).
 * f32: max abs error <= 3 · (max abs error of ref_backward_naive_f32) + 1e-5, both against the f64
 *      oracle on the same f32 inputs.
 * And each call writes nothing but its outputs (padding, gaps and guards keep canaries). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pairwise_grid.h"
#include "util.h"
#include "util_backward.h"

/* ---- the grid ------------------------------------------------------------------------------
 * The pairwise-covering grid of pairwise_grid.h (OA(49, 8, 7, 2)), with each direction's own
 * values of Nq, Nk and D: their order puts the long sequences against the small head dims so the
 * whole grid stays cheap (the backward's oracle, O(B·Hq·Nq·Nk·(4D + 3Dv)), near 3e8 element loads). */

static const pg_levels levels[TUB_DIRECTIONS] = {
    [TUB_FORWARD] =
        {
            .nq = {128, 1, 1023, 17, 203, 256, 113},
            .nk = {203, 17, 1, 256, 113, 128, 1023},
            .d = {256, 128, 64, 1, 8, 111, 59},
            .batch2_max_nq_nk = 20000,
        },
    [TUB_BACKWARD] =
        {
            .nq = {33, 64, 203, 257, 17, 1, 113},
            .nk = {203, 257, 33, 64, 113, 1, 17},
            .d = {16, 111, 64, 8, 128, 1, 59},
            .batch2_max_nq_nk = 4000,
        },
};

Test(grid, covers_every_pair_and_both_length_orders_under_each_causal_mode)
{
    int a1 = 0, a2 = 0, l1 = 0, l2 = 0;
    cr_assert(pg_covers_every_pair(&a1, &a2, &l1, &l2), "axes %d and %d: value pair (%d, %d) is not covered",
              a1, a2, l1, l2);
    /* A triple the pairs do not promise: each causal mode with Nq > Nk and with Nq < Nk, per dtype
     * and direction. It depends on each direction's Nq and Nk values, so it is checked here. */
    for (int d = 0; d < TUB_DIRECTIONS; d++)
        for (int c = 1; c < 3; c++)
            for (int t = 0; t < 2; t++)
                for (int longer_q = 0; longer_q < 2; longer_q++) {
                    int found = 0;
                    for (int r = 0; r < PG_ROWS && !found; r++) {
                        tu_shape s;
                        fa_params p;
                        pg_case(&levels[d], r, &s, &p);
                        found = p.causal == pg_causal_levels[c] && s.dtype == pg_dtype_levels[t] &&
                                (longer_q ? s.q_len > s.kv_len : s.q_len < s.kv_len);
                    }
                    cr_assert(found, "%s: no grid row with causal %d, dtype %d and Nq %s Nk",
                              tub_direction_name((tub_direction)d), c, t, longer_q ? ">" : "<");
                }
}

/* Oracle work per forward case, in element products; bigger cases compare a sample of rows. */
#define ORACLE_BUDGET 3000000

static void check_row_forward(fa_context *ctx, pg_row *g)
{
    tu_problem pr;
    tu_problem_make(&pr, &g->s, &g->rng, 2.5);
    char msg[512];

    fa_status st = fa_forward(ctx, &g->p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
    cr_expect_eq(st, FA_OK, "forward, grid row %d (%s), seed %llu: status %d (%s)", g->row, g->desc,
                 (unsigned long long)g->seed, st, fa_status_str(st));
    if (st == FA_OK) {
        cr_expect(tu_problem_only_defined_written(&pr),
                  "forward, grid row %d (%s), seed %llu: a byte outside the out view or lse was written",
                  g->row, g->desc, (unsigned long long)g->seed);
        int64_t *rows;
        int64_t n = tu_pick_rows(&pr, &g->p, ORACLE_BUDGET, &rows);
        int ok = tu_check_accuracy(&pr, &g->p, rows, n, 1e-12, msg, sizeof msg);
        cr_expect(ok, "forward, grid row %d (%s), seed %llu, %lld rows compared: %s", g->row, g->desc,
                  (unsigned long long)g->seed, (long long)n, msg);
        free(rows);
    }
    tu_problem_free(&pr);
}

/* The backward's check of one problem on a context: status, only dq/dk/dv written, the accuracy
 * rule. `what` names the case in messages. */
static void expect_gradients(fa_context *ctx, const fa_params *p, tub_problem *bp, const char *what,
                             uint64_t seed)
{
    fa_dtype dtype = bp->fw.shape.dtype;
    char msg[512];
    fa_status st = tub_forward(ctx, p, bp);
    cr_assert_eq(st, FA_OK, "backward, %s, seed %llu: forward status %d", what, (unsigned long long)seed, st);
    st = tub_backward(ctx, p, bp);
    cr_expect_eq(st, FA_OK, "backward, %s, seed %llu: status %d (%s)", what, (unsigned long long)seed, st,
                 fa_status_str(st));
    if (st != FA_OK) return;
    cr_expect(tub_grads_only_defined_written(bp),
              "backward, %s, seed %llu: a byte outside dq/dk/dv was written", what, (unsigned long long)seed);
    tub_ref oracle, naive;
    tub_ref_compute(&oracle, bp, p);
    if (dtype == FA_F32) tub_ref_compute_naive_f32(&naive, bp, p);
    cr_expect(tub_check_accuracy(bp, p, &oracle, dtype == FA_F32 ? &naive : NULL, 1e-11, msg, sizeof msg),
              "backward, %s, seed %llu: %s", what, (unsigned long long)seed, msg);
    tub_ref_free(&oracle);
    if (dtype == FA_F32) tub_ref_free(&naive);
}

static void check_row_backward(fa_context *ctx, pg_row *g)
{
    tub_problem bp;
    tub_make(&bp, &g->s, &g->rng, 2.5);
    char what[320];
    snprintf(what, sizeof what, "grid row %d (%s)", g->row, g->desc);
    expect_gradients(ctx, &g->p, &bp, what, g->seed);
    tub_free(&bp);
}

static pg_row_check *const grid_check[TUB_DIRECTIONS] = {check_row_forward, check_row_backward};

Test(accuracy, f64_matches_oracle_over_pairwise_grid_forward_1e_12_and_backward_1e_11)
{
    for (int d = 0; d < TUB_DIRECTIONS; d++) pg_run(&levels[d], FA_F64, grid_check[d]);
}

Test(accuracy, f32_within_naive_f32_error_over_pairwise_grid_forward_2x_and_backward_3x)
{
    for (int d = 0; d < TUB_DIRECTIONS; d++) pg_run(&levels[d], FA_F32, grid_check[d]);
}

/* Outside the grid: D and Dv at the ends of their range in every combination (forward: 1 and
 * FA_MAX_HEAD_DIM, and DeepSeek's MLA dims, 576 over 512: one latent cache, the values its first
 * 512 dims; backward: 512 and 1, and D != Dv at the limit), and, backward, inputs that broadcast
 * over the batch with a stride of 0 (one K and V for every batch; each batch's dk and dv are that
 * batch's contributions, which the oracle reads the same way). The forward runs on the default
 * (NULL) context and compares every row; the backward on a context of its own. */
enum { M = FA_MAX_HEAD_DIM };
static const struct {
    tub_direction dir;
    tu_shape s;
    fa_causal c;
    int broadcast;
} edge_cases[] = {
    {TUB_FORWARD, {FA_F32, 1, 2, 1, 33, 47, M, M, TU_BHSD}, FA_CAUSAL_NONE, 0},
    {TUB_FORWARD, {FA_F32, 1, 2, 1, 33, 47, 1, M, TU_BSHD}, FA_CAUSAL_TOP_LEFT, 0},
    {TUB_FORWARD, {FA_F32, 1, 2, 1, 33, 47, M, 1, TU_PACKED}, FA_CAUSAL_BOTTOM_RIGHT, 0},
    {TUB_FORWARD, {FA_F32, 1, 2, 1, 33, 47, 1, 1, TU_BHSD}, FA_CAUSAL_NONE, 0},
    {TUB_FORWARD, {FA_F32, 1, 2, 1, 33, 47, 576, 512, TU_BSHD}, FA_CAUSAL_TOP_LEFT, 0},
    {TUB_FORWARD, {FA_F64, 1, 2, 1, 33, 47, M, M, TU_PACKED}, FA_CAUSAL_BOTTOM_RIGHT, 0},
    {TUB_FORWARD, {FA_F64, 1, 2, 1, 33, 47, 1, M, TU_BHSD}, FA_CAUSAL_NONE, 0},
    {TUB_FORWARD, {FA_F64, 1, 2, 1, 33, 47, M, 1, TU_BSHD}, FA_CAUSAL_TOP_LEFT, 0},
    {TUB_FORWARD, {FA_F64, 1, 2, 1, 33, 47, 1, 1, TU_PACKED}, FA_CAUSAL_BOTTOM_RIGHT, 0},
    {TUB_FORWARD, {FA_F64, 1, 2, 1, 33, 47, 576, 512, TU_BHSD}, FA_CAUSAL_NONE, 0},
    {TUB_BACKWARD, {FA_F64, 1, 2, 1, 9, 13, 512, 512, TU_BHSD}, FA_CAUSAL_NONE, 0},
    {TUB_BACKWARD, {FA_F32, 1, 2, 1, 20, 11, 300, 512, TU_BSHD}, FA_CAUSAL_BOTTOM_RIGHT, 0},
    {TUB_BACKWARD, {FA_F64, 1, 2, 2, 15, 21, 512, 1, TU_PACKED}, FA_CAUSAL_TOP_LEFT, 0},
    {TUB_BACKWARD, {FA_F64, 3, 2, 1, 40, 33, 16, 8, TU_BHSD}, FA_CAUSAL_TOP_LEFT, 1},
    {TUB_BACKWARD, {FA_F32, 3, 4, 2, 40, 33, 16, 8, TU_BSHD}, FA_CAUSAL_NONE, 1},
};
#define N_EDGE_CASES ((int)(sizeof edge_cases / sizeof edge_cases[0]))

Test(accuracy, head_dims_at_limits_and_broadcast_inputs_match_oracle_forward_and_backward)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    for (int c = 0; c < N_EDGE_CASES; c++) {
        const tu_shape *s = &edge_cases[c].s;
        fa_params p = FA_PARAMS_INIT;
        p.causal = edge_cases[c].c;
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tub_problem bp;
        tub_make(&bp, s, &rng, edge_cases[c].dir == TUB_FORWARD ? 1.0 : 2.0);
        if (edge_cases[c].broadcast) bp.fw.k.stride_batch = bp.fw.v.stride_batch = 0;
        char desc[320], msg[512];
        tub_desc(&bp, &p, 0, 0, desc, sizeof desc);
        if (edge_cases[c].broadcast) strncat(desc, " (k, v broadcast)", sizeof desc - strlen(desc) - 1);
        if (edge_cases[c].dir == TUB_BACKWARD) {
            expect_gradients(ctx, &p, &bp, desc, seed);
        } else {
            tu_problem *pr = &bp.fw;
            fa_status st = fa_forward(NULL, &p, &pr->q, &pr->k, &pr->v, &pr->out, pr->lse);
            cr_expect_eq(st, FA_OK, "forward, %s, seed %llu: status %d", desc, (unsigned long long)seed, st);
            if (st == FA_OK) {
                cr_expect(tu_check_picked_accuracy(pr, &p, INT64_MAX, 1e-12, msg, sizeof msg),
                          "forward, %s, seed %llu: %s", desc, (unsigned long long)seed, msg);
            }
        }
        tub_free(&bp);
    }
    fa_context_destroy(ctx);
}

/* The default (NULL) context and an explicit one give the same gradients to the byte, and the
 * backward accepts out/lse produced by a different context than its own. */
Test(accuracy, null_context_matches_explicit_context_bitwise_in_the_backward)
{
    uint64_t seed = tu_test_seed();
    tu_shape s = {FA_F64, 2, 4, 2, 45, 70, 24, 17, TU_BSHD};
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    tu_rng rng = tu_rng_make(seed);
    tub_problem a, b;
    tub_make(&a, &s, &rng, 2.0);
    rng = tu_rng_make(seed);
    tub_make(&b, &s, &rng, 2.0);
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    cr_assert_eq(tub_forward(ctx, &p, &a), FA_OK);
    cr_assert_eq(tub_backward(ctx, &p, &a), FA_OK);
    cr_assert_eq(tub_forward(NULL, &p, &b), FA_OK);
    cr_assert_eq(tub_backward(NULL, &p, &b), FA_OK);
    for (int g = 0; g < 3; g++) {
        int64_t where;
        cr_expect(
            tub_views_bitwise_equal(&a.grad[g], &b.grad[g], &where),
            "seed %llu: gradient %d differs between an explicit and the NULL context at flat index %lld",
            (unsigned long long)seed, g, (long long)where);
    }
    char msg[512];
    tub_ref oracle;
    tub_ref_compute(&oracle, &a, &p);
    cr_expect(tub_check_accuracy(&a, &p, &oracle, NULL, 1e-11, msg, sizeof msg), "seed %llu: %s",
              (unsigned long long)seed, msg);
    tub_ref_free(&oracle);
    fa_context_destroy(ctx);
    tub_free(&a);
    tub_free(&b);
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
                cr_expect(tu_check_picked_accuracy(&mix, &p, INT64_MAX, 1e-12, msg, sizeof msg),
                          "%s (q bhsd, k bshd, v packed), seed %llu: %s", desc, (unsigned long long)seed,
                          msg);
            }
            for (int l = 0; l < 3; l++) tu_problem_free(&by_layout[l]);
        }
}
