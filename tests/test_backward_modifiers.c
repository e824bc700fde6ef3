/* SPDX-License-Identifier: BSD-3-Clause */
/* The backward under the score modifiers of fa_params (windows, softcap, ALiBi, bias, sinks), each
 * alone and in combination over the pairwise grid of modifier_grid.h, against the analytic float64
 * oracle (tests/reference_backward.c); out and lse come from fa_forward on the same context.
 *
 * dq, dk and dv follow the rule of test_backward_accuracy.c (tub_check_accuracy): f64 normwise
 * relative error <= 1e-11 (the norm floored at 1e-4 of an a-priori bound, which still holds: the
 * softcap's derivative is at most 1, and the sink only lowers the probabilities); f32 max abs error
 * <= 3 · the naive f32 algorithm's + 1e-5. With sinks, dsinks is checked too (tm_check_dsinks: f64
 * within half a float ulp of the exact sum, since fa_backward rounds it to float once; f32 within 3x
 * the naive f32 error + 1e-5). The call writes nothing but the gradient views and the Hq dsinks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "modifier_grid.h"
#include "modifiers.h"
#include "util.h"
#include "util_backward.h"

static void check_backward(fa_context *ctx, const tu_shape *s, const tm_spec *spec, double scale, tu_rng *rng,
                           const char *where, uint64_t seed)
{
    tub_problem bp;
    tub_make(&bp, s, rng, 2.5);
    tm_mods m;
    tm_mods_make(&m, spec, s, scale, rng);
    char desc[512], msg[512];
    tm_desc(s, &m, desc, sizeof desc);
    cr_assert_eq(tub_forward(ctx, &m.p, &bp), FA_OK, "%s (%s): forward", where, desc);
    if (spec->sinks) tm_mods_want_dsinks(&m);
    fa_status st = tub_backward(ctx, &m.p, &bp);
    cr_expect_eq(st, FA_OK, "%s (%s), seed %llu: status %d (%s)", where, desc, (unsigned long long)seed, st,
                 fa_status_str(st));
    if (st == FA_OK) {
        cr_expect(tub_grads_only_defined_written(&bp),
                  "%s (%s), seed %llu: a byte outside dq/dk/dv was written", where, desc,
                  (unsigned long long)seed);
        int f32 = s->dtype == FA_F32;
        tub_ref oracle, naive;
        tub_ref_compute(&oracle, &bp, &m.p);
        if (f32) tub_ref_compute_naive_f32(&naive, &bp, &m.p);
        cr_expect(tub_check_accuracy(&bp, &m.p, &oracle, f32 ? &naive : NULL, 1e-11, msg, sizeof msg),
                  "%s (%s), seed %llu: %s", where, desc, (unsigned long long)seed, msg);
        if (spec->sinks)
            cr_expect(tm_check_dsinks(&bp, &m, msg, sizeof msg), "%s (%s), seed %llu: %s", where, desc,
                      (unsigned long long)seed, msg);
        tub_ref_free(&oracle);
        if (f32) tub_ref_free(&naive);
    }
    tm_mods_free(&m);
    tub_free(&bp);
}

static void check_grid_row(fa_context *ctx, mg_row *g)
{
    char where[96];
    snprintf(where, sizeof where, "grid row %d, blocks %d/%d", g->row, g->block_q, g->block_k);
    check_backward(ctx, &g->s, &g->spec, g->scale, &g->rng, where, g->seed);
}

Test(backward_modifiers, f64_gradients_match_oracle_to_1e_11_over_pairwise_modifier_grid)
{
    mg_run(FA_F64, check_grid_row);
}

Test(backward_modifiers, f32_gradients_within_3x_naive_f32_error_over_pairwise_modifier_grid)
{
    mg_run(FA_F32, check_grid_row);
}

/* One modifier at a time (and all together), on one shape with grouped heads, Nq > Nk and odd
 * head dims, on small blocks (several tiles each way) and automatic ones. */
static const struct {
    const char *name;
    tm_spec spec;
} alone[] = {
    {"window_left 7", {FA_CAUSAL_NONE, 7, -1, 0.0, 0, TM_BIAS_OFF, 0}},
    {"window_right 3", {FA_CAUSAL_NONE, -1, 3, 0.0, 0, TM_BIAS_OFF, 0}},
    {"softcap 2", {FA_CAUSAL_NONE, -1, -1, 2.0, 0, TM_BIAS_OFF, 0}},
    {"alibi", {FA_CAUSAL_NONE, -1, -1, 0.0, 1, TM_BIAS_OFF, 0}},
    {"key-padding bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_KEY_PADDING, 0}},
    {"key-padding bias, strides 0", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_KEY_PADDING_STRIDE0, 0}},
    {"full bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_FULL, 0}},
    {"batch-broadcast bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_BATCH_BROADCAST, 0}},
    {"head-broadcast bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_HEAD_BROADCAST, 0}},
    {"sinks", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_OFF, 1}},
    {"all at once, causal", {FA_CAUSAL_TOP_LEFT, 10, 0, 5.0, 1, TM_BIAS_KEY_PADDING, 1}},
};
#define N_ALONE ((int)(sizeof alone / sizeof alone[0]))

Test(backward_modifiers, each_modifier_alone_matches_oracle_f32_and_f64)
{
    uint64_t seed = tu_test_seed();
    static const int blocks[2][2] = {{0, 0}, {8, 16}};
    for (int b = 0; b < 2; b++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.block_q = blocks[b][0];
        o.block_k = blocks[b][1];
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
        for (int t = 0; t < 2; t++)
            for (int c = 0; c < N_ALONE; c++) {
                tu_shape s = {t ? FA_F64 : FA_F32, 2, 4, 2, 58, 41, 21, 15, (tu_layout)(c % 3)};
                tu_rng rng = tu_rng_make(seed + (uint64_t)(100 * b + 20 * t + c));
                char where[128];
                snprintf(where, sizeof where, "%s, blocks %d/%d", alone[c].name, o.block_q, o.block_k);
                check_backward(ctx, &s, &alone[c].spec, 0.0, &rng, where, seed);
            }
        fa_context_destroy(ctx);
    }
}
