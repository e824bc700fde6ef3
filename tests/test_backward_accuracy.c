/* SPDX-License-Identifier: BSD-3-Clause */
/* Backward accuracy against the analytic float64 oracle (ref_backward) over a pairwise-covering
 * grid of shapes. The backward's out and lse come from fa_forward on the same context.
 *
 * Per gradient tensor (dq, dk, dv), every value finite and (tub_check_accuracy):
 * f64: normwise relative error max|x - ref| / max|ref| <= 1e-11, the norm floored at 1e-4 of an
 *      a-priori bound on the tensor (only matters where the exact gradient is zero, e.g. Nq = 1
 *      under a causal mask: one visible key, P = 1, dS = 0).
 * f32: max abs error <= 3 · (max abs error of ref_backward_naive_f32) + 1e-5, both against the f64
 *      oracle on the same f32 inputs.
 * And the call writes nothing but the elements of dq, dk and dv (gaps and guards keep canaries). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "pairwise_grid.h"
#include "util.h"
#include "util_backward.h"

/* ---- the grid ------------------------------------------------------------------------------
 * The pairwise-covering grid of pairwise_grid.h (OA(49, 8, 7, 2), shared with the forward's
 * accuracy suite); these are the backward's own values. Their order keeps the oracle's
 * O(B·Hq·Nq·Nk·(4D + 3Dv)) work of the whole grid near 3e8 element loads. */

static const pg_levels levels = {
    .nq = {33, 64, 203, 257, 17, 1, 113},
    .nk = {203, 257, 33, 64, 113, 1, 17},
    .d = {16, 111, 64, 8, 128, 1, 59},
    .batch2_max_nq_nk = 4000,
};

Test(backward_grid, covers_every_pair_and_both_length_orders_under_each_causal_mode)
{
    int a1 = 0, a2 = 0, l1 = 0, l2 = 0;
    cr_assert(pg_covers_every_pair(&a1, &a2, &l1, &l2), "axes %d and %d: value pair (%d, %d) is not covered",
              a1, a2, l1, l2);
    /* A triple the pairs do not promise: each causal mode with Nq > Nk and with Nq < Nk, per dtype.
     * It depends on this suite's Nq and Nk values, so it stays here. */
    for (int c = 1; c < 3; c++)
        for (int t = 0; t < 2; t++)
            for (int longer_q = 0; longer_q < 2; longer_q++) {
                int found = 0;
                for (int r = 0; r < PG_ROWS && !found; r++) {
                    tu_shape s;
                    fa_params p;
                    pg_case(&levels, r, &s, &p);
                    found = p.causal == pg_causal_levels[c] && s.dtype == pg_dtype_levels[t] &&
                            (longer_q ? s.q_len > s.kv_len : s.q_len < s.kv_len);
                }
                cr_assert(found, "no grid row with causal %d, dtype %d and Nq %s Nk", c, t,
                          longer_q ? ">" : "<");
            }
}

static void check_row(fa_context *ctx, pg_row *g)
{
    fa_dtype dtype = g->s.dtype;
    tub_problem bp;
    tub_make(&bp, &g->s, &g->rng, 2.5);
    char msg[512];

    fa_status st = tub_forward(ctx, &g->p, &bp);
    cr_assert_eq(st, FA_OK, "grid row %d (%s), seed %llu: forward status %d", g->row, g->desc,
                 (unsigned long long)g->seed, st);
    st = tub_backward(ctx, &g->p, &bp);
    cr_expect_eq(st, FA_OK, "grid row %d (%s), seed %llu: backward status %d (%s)", g->row, g->desc,
                 (unsigned long long)g->seed, st, fa_status_str(st));
    if (st == FA_OK) {
        cr_expect(tub_grads_only_defined_written(&bp),
                  "grid row %d (%s), seed %llu: a byte outside the dq/dk/dv views was written", g->row,
                  g->desc, (unsigned long long)g->seed);
        tub_ref oracle, naive;
        tub_ref_compute(&oracle, &bp, &g->p);
        if (dtype == FA_F32) tub_ref_compute_naive_f32(&naive, &bp, &g->p);
        int ok =
            tub_check_accuracy(&bp, &g->p, &oracle, dtype == FA_F32 ? &naive : NULL, 1e-11, msg, sizeof msg);
        cr_expect(ok, "grid row %d (%s), seed %llu: %s", g->row, g->desc, (unsigned long long)g->seed, msg);
        tub_ref_free(&oracle);
        if (dtype == FA_F32) tub_ref_free(&naive);
    }
    tub_free(&bp);
}

Test(backward_accuracy, f64_gradients_match_oracle_to_1e_11_over_pairwise_grid)
{
    pg_run(&levels, FA_F64, check_row);
}

Test(backward_accuracy, f32_gradients_within_3x_naive_f32_error_over_pairwise_grid)
{
    pg_run(&levels, FA_F32, check_row);
}

/* The default (NULL) context and an explicit one give the same gradients to the byte, and the
 * backward accepts out/lse produced by a different context than its own. */
Test(backward_accuracy, null_context_matches_explicit_context_bitwise)
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

/* Outside the grid: the largest head dims (D = Dv = 512, and D != Dv at the limit), and inputs
 * that broadcast over the batch with a stride of 0 (one K and V for every batch; each batch's dk
 * and dv are that batch's contributions, which the oracle reads the same way). */
Test(backward_accuracy, largest_head_dims_and_broadcast_inputs_match_oracle)
{
    uint64_t seed = tu_test_seed();
    static const struct {
        tu_shape s;
        fa_causal c;
        int broadcast;
    } cases[] = {
        {{FA_F64, 1, 2, 1, 9, 13, 512, 512, TU_BHSD}, FA_CAUSAL_NONE, 0},
        {{FA_F32, 1, 2, 1, 20, 11, 300, 512, TU_BSHD}, FA_CAUSAL_BOTTOM_RIGHT, 0},
        {{FA_F64, 1, 2, 2, 15, 21, 512, 1, TU_PACKED}, FA_CAUSAL_TOP_LEFT, 0},
        {{FA_F64, 3, 2, 1, 40, 33, 16, 8, TU_BHSD}, FA_CAUSAL_TOP_LEFT, 1},
        {{FA_F32, 3, 4, 2, 40, 33, 16, 8, TU_BSHD}, FA_CAUSAL_NONE, 1},
    };
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        tu_rng rng = tu_rng_make(seed + (uint64_t)c);
        tub_problem bp;
        tub_make(&bp, &cases[c].s, &rng, 2.0);
        if (cases[c].broadcast) bp.fw.k.stride_batch = bp.fw.v.stride_batch = 0;
        fa_params p = FA_PARAMS_INIT;
        p.causal = cases[c].c;
        char desc[320], msg[512];
        tub_desc(&bp, &p, 0, 0, desc, sizeof desc);
        cr_assert_eq(tub_forward(ctx, &p, &bp), FA_OK, "%s", desc);
        fa_status st = tub_backward(ctx, &p, &bp);
        cr_expect_eq(st, FA_OK, "%s%s, seed %llu: status %d", desc,
                     cases[c].broadcast ? " (k, v broadcast)" : "", (unsigned long long)seed, st);
        if (st == FA_OK) {
            tub_ref oracle, naive;
            tub_ref_compute(&oracle, &bp, &p);
            if (cases[c].s.dtype == FA_F32) tub_ref_compute_naive_f32(&naive, &bp, &p);
            cr_expect(tub_check_accuracy(&bp, &p, &oracle, cases[c].s.dtype == FA_F32 ? &naive : NULL, 1e-11,
                                         msg, sizeof msg),
                      "%s%s, seed %llu: %s", desc, cases[c].broadcast ? " (k, v broadcast)" : "",
                      (unsigned long long)seed, msg);
            cr_expect(tub_grads_only_defined_written(&bp), "%s: wrote outside dq/dk/dv", desc);
            tub_ref_free(&oracle);
            if (cases[c].s.dtype == FA_F32) tub_ref_free(&naive);
        }
        tub_free(&bp);
    }
    fa_context_destroy(ctx);
}
