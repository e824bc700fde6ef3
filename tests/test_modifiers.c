/* SPDX-License-Identifier: BSD-3-Clause */
/* The forward and the backward under the score modifiers of fa_params (include/flashattn.h, "Score
 * modifiers": windows, softcap, ALiBi, bias, sinks), each alone and in combination over the pairwise
 * grid of modifier_grid.h, against the float64 oracles (tests/reference.c, reference_backward.c);
 * the backward's out and lse come from fa_forward on the same context.
 *
 * Forward, the rule of test_accuracy.c (tu_check_accuracy):
 *   f64: max|x - ref| <= 1e-12 · max|ref| for out and for the finite lse; non-finite values (the
 *        lse of rows that see no key, -inf, or sinks[h]) must match exactly;
 *   f32: max abs error <= 2 · (max abs error of the naive f32 algorithm) + 1e-6 (lse: + 1e-6
 *        relative), both against the f64 oracle on the same f32 inputs.
 * Backward, dq, dk and dv follow tub_check_accuracy: f64 normwise relative error <= 1e-11 (the norm
 * floored at 1e-4 of an a-priori bound, which still holds: the softcap's derivative is at most 1,
 * and the sink only lowers the probabilities); f32 max abs error <= 3 · the naive f32 algorithm's
 * + 1e-5. With sinks, dsinks is checked too (tm_check_dsinks: f64 within half a float ulp of the
 * exact sum, since fa_backward rounds it to float once; f32 within 3x the naive f32 error + 1e-5).
 * Every row is compared, and a call writes nothing but its outputs (out and lse; the gradient
 * views and the Hq dsinks). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "modifier_grid.h"
#include "modifiers.h"
#include "util.h"
#include "util_backward.h"

static void check_forward(fa_context *ctx, tub_problem *bp, const tm_mods *m, const char *where,
                          const char *desc, uint64_t seed)
{
    tu_problem *pr = &bp->fw;
    char msg[512];
    fa_status st = fa_forward(ctx, &m->p, &pr->q, &pr->k, &pr->v, &pr->out, pr->lse);
    cr_expect_eq(st, FA_OK, "%s (%s), seed %llu: status %d (%s)", where, desc, (unsigned long long)seed, st,
                 fa_status_str(st));
    if (st != FA_OK) return;
    cr_expect(tu_problem_only_defined_written(pr),
              "%s (%s), seed %llu: a byte outside out or lse was written", where, desc,
              (unsigned long long)seed);
    cr_expect(tu_check_picked_accuracy(pr, &m->p, INT64_MAX, 1e-12, msg, sizeof msg),
              "%s (%s), seed %llu: %s", where, desc, (unsigned long long)seed, msg);
}

static void check_backward(fa_context *ctx, tub_problem *bp, tm_mods *m, const char *where, const char *desc,
                           uint64_t seed)
{
    char msg[512];
    cr_assert_eq(tub_forward(ctx, &m->p, bp), FA_OK, "%s (%s): forward", where, desc);
    if (m->spec.sinks) tm_mods_want_dsinks(m);
    fa_status st = tub_backward(ctx, &m->p, bp);
    cr_expect_eq(st, FA_OK, "%s (%s), seed %llu: status %d (%s)", where, desc, (unsigned long long)seed, st,
                 fa_status_str(st));
    if (st != FA_OK) return;
    cr_expect(tub_grads_only_defined_written(bp), "%s (%s), seed %llu: a byte outside dq/dk/dv was written",
              where, desc, (unsigned long long)seed);
    int f32 = bp->fw.shape.dtype == FA_F32;
    tub_ref oracle, naive;
    tub_ref_compute(&oracle, bp, &m->p);
    if (f32) tub_ref_compute_naive_f32(&naive, bp, &m->p);
    cr_expect(tub_check_accuracy(bp, &m->p, &oracle, f32 ? &naive : NULL, 1e-11, msg, sizeof msg),
              "%s (%s), seed %llu: %s", where, desc, (unsigned long long)seed, msg);
    if (m->spec.sinks)
        cr_expect(tm_check_dsinks(bp, m, msg, sizeof msg), "%s (%s), seed %llu: %s", where, desc,
                  (unsigned long long)seed, msg);
    tub_ref_free(&oracle);
    if (f32) tub_ref_free(&naive);
}

/* One problem under one modifier spec, in one direction. */
static void check_case(tub_direction dir, fa_context *ctx, const tu_shape *s, const tm_spec *spec,
                       double scale, tu_rng *rng, const char *where, uint64_t seed)
{
    tub_problem bp;
    tub_make(&bp, s, rng, 2.5);
    tm_mods m;
    tm_mods_make(&m, spec, s, scale, rng);
    char desc[512], at[160];
    tm_desc(s, &m, desc, sizeof desc);
    snprintf(at, sizeof at, "%s, %s", tub_direction_name(dir), where);
    if (dir == TUB_FORWARD)
        check_forward(ctx, &bp, &m, at, desc, seed);
    else
        check_backward(ctx, &bp, &m, at, desc, seed);
    tm_mods_free(&m);
    tub_free(&bp);
}

Test(modifier_grid, covers_every_pair_of_modifier_values)
{
    int a1 = 0, a2 = 0, l1 = 0, l2 = 0;
    cr_assert(mg_covers_every_pair(&a1, &a2, &l1, &l2), "axes %d and %d: value pair (%d, %d) is not covered",
              a1, a2, l1, l2);
}

static void check_grid_row(tub_direction dir, fa_context *ctx, mg_row *g)
{
    char where[96];
    snprintf(where, sizeof where, "grid row %d, blocks %d/%d", g->row, g->block_q, g->block_k);
    check_case(dir, ctx, &g->s, &g->spec, g->scale, &g->rng, where, g->seed);
}

static void check_grid_row_forward(fa_context *ctx, mg_row *g)
{
    check_grid_row(TUB_FORWARD, ctx, g);
}

static void check_grid_row_backward(fa_context *ctx, mg_row *g)
{
    check_grid_row(TUB_BACKWARD, ctx, g);
}

static mg_row_check *const grid_check[TUB_DIRECTIONS] = {check_grid_row_forward, check_grid_row_backward};

/* f64: forward to 1e-12, gradients to 1e-11; f32: within 2x (forward) and 3x (backward) the naive
 * f32 error. */
Test(modifiers, f64_matches_oracle_over_pairwise_modifier_grid_forward_and_backward)
{
    for (int d = 0; d < TUB_DIRECTIONS; d++) mg_run(FA_F64, grid_check[d]);
}

Test(modifiers, f32_within_naive_f32_error_over_pairwise_modifier_grid_forward_and_backward)
{
    for (int d = 0; d < TUB_DIRECTIONS; d++) mg_run(FA_F32, grid_check[d]);
}

/* One modifier at a time (and all together), on one shape per direction with grouped heads and odd
 * head dims (forward Nq < Nk, backward Nq > Nk), on small blocks (several tiles) and automatic
 * ones. */
static const tu_shape alone_shape[TUB_DIRECTIONS] = {
    {FA_F32, 2, 4, 2, 45, 77, 21, 15, TU_BHSD},
    {FA_F32, 2, 4, 2, 58, 41, 21, 15, TU_BHSD},
};

static const struct {
    tub_direction dir;
    const char *name;
    tm_spec spec;
} alone[] = {
    {TUB_FORWARD, "window_left 9", {FA_CAUSAL_NONE, 9, -1, 0.0, 0, TM_BIAS_OFF, 0}},
    {TUB_FORWARD, "window_right 4", {FA_CAUSAL_NONE, -1, 4, 0.0, 0, TM_BIAS_OFF, 0}},
    {TUB_FORWARD, "softcap 2", {FA_CAUSAL_NONE, -1, -1, 2.0, 0, TM_BIAS_OFF, 0}},
    {TUB_FORWARD, "alibi", {FA_CAUSAL_NONE, -1, -1, 0.0, 1, TM_BIAS_OFF, 0}},
    {TUB_FORWARD, "key-padding bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_KEY_PADDING, 0}},
    {TUB_FORWARD,
     "key-padding bias, strides 0",
     {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_KEY_PADDING_STRIDE0, 0}},
    {TUB_FORWARD, "full bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_FULL, 0}},
    {TUB_FORWARD, "batch-broadcast bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_BATCH_BROADCAST, 0}},
    {TUB_FORWARD, "head-broadcast bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_HEAD_BROADCAST, 0}},
    {TUB_FORWARD, "sinks", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_OFF, 1}},
    {TUB_FORWARD, "all at once, causal", {FA_CAUSAL_BOTTOM_RIGHT, 12, 0, 5.0, 1, TM_BIAS_FULL, 1}},
    {TUB_BACKWARD, "window_left 7", {FA_CAUSAL_NONE, 7, -1, 0.0, 0, TM_BIAS_OFF, 0}},
    {TUB_BACKWARD, "window_right 3", {FA_CAUSAL_NONE, -1, 3, 0.0, 0, TM_BIAS_OFF, 0}},
    {TUB_BACKWARD, "softcap 2", {FA_CAUSAL_NONE, -1, -1, 2.0, 0, TM_BIAS_OFF, 0}},
    {TUB_BACKWARD, "alibi", {FA_CAUSAL_NONE, -1, -1, 0.0, 1, TM_BIAS_OFF, 0}},
    {TUB_BACKWARD, "key-padding bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_KEY_PADDING, 0}},
    {TUB_BACKWARD,
     "key-padding bias, strides 0",
     {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_KEY_PADDING_STRIDE0, 0}},
    {TUB_BACKWARD, "full bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_FULL, 0}},
    {TUB_BACKWARD, "batch-broadcast bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_BATCH_BROADCAST, 0}},
    {TUB_BACKWARD, "head-broadcast bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_HEAD_BROADCAST, 0}},
    {TUB_BACKWARD, "sinks", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_OFF, 1}},
    {TUB_BACKWARD, "all at once, causal", {FA_CAUSAL_TOP_LEFT, 10, 0, 5.0, 1, TM_BIAS_KEY_PADDING, 1}},
};
#define N_ALONE ((int)(sizeof alone / sizeof alone[0]))

Test(modifiers, each_modifier_alone_matches_oracle_f32_and_f64_forward_and_backward)
{
    uint64_t seed = tu_test_seed();
    static const int blocks[2][2] = {{0, 0}, {8, 16}};
    for (int b = 0; b < 2; b++) {
        fa_context *ctx = tu_context(0, blocks[b][0], blocks[b][1]);
        for (int t = 0; t < 2; t++)
            for (int c = 0; c < N_ALONE; c++) {
                tu_shape s = alone_shape[alone[c].dir];
                s.dtype = t ? FA_F64 : FA_F32;
                int k = 0; /* the case's index among its direction's, which picks its layout */
                for (int x = 0; x < c; x++) k += alone[x].dir == alone[c].dir;
                s.layout = (tu_layout)(k % 3);
                tu_rng rng = tu_rng_make(seed + (uint64_t)(100 * b + 40 * t + c));
                char where[128];
                snprintf(where, sizeof where, "%s, blocks %d/%d", alone[c].name, blocks[b][0], blocks[b][1]);
                check_case(alone[c].dir, ctx, &s, &alone[c].spec, 0.0, &rng, where, seed);
            }
        fa_context_destroy(ctx);
    }
}
