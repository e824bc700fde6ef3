/* SPDX-License-Identifier: BSD-3-Clause */
/* The forward under the score modifiers of fa_params (include/flashattn.h, "Score modifiers":
 * windows, softcap, ALiBi, bias, sinks), each alone and in combination over the pairwise grid of
 * modifier_grid.h, against the float64 oracle (tests/reference.c), with the accuracy rule of
 * test_accuracy.c (tu_check_accuracy):
 *   f64: max|x - ref| <= 1e-12 · max|ref| for out and for the finite lse; non-finite values (the
 *        lse of rows that see no key, -inf, or sinks[h]) must match exactly;
 *   f32: max abs error <= 2 · (max abs error of the naive f32 algorithm) + 1e-6 (lse: + 1e-6
 *        relative), both against the f64 oracle on the same f32 inputs.
 * Every row of every problem is compared, and the call writes nothing but out and lse. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "modifier_grid.h"
#include "modifiers.h"
#include "util.h"

static void check_forward(fa_context *ctx, const tu_shape *s, const tm_spec *spec, double scale, tu_rng *rng,
                          const char *where, uint64_t seed)
{
    tu_problem pr;
    tu_problem_make(&pr, s, rng, 2.5);
    tm_mods m;
    tm_mods_make(&m, spec, s, scale, rng);
    char desc[512], msg[512];
    tm_desc(s, &m, desc, sizeof desc);
    fa_status st = fa_forward(ctx, &m.p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
    cr_expect_eq(st, FA_OK, "%s (%s), seed %llu: status %d (%s)", where, desc, (unsigned long long)seed, st,
                 fa_status_str(st));
    if (st == FA_OK) {
        cr_expect(tu_problem_only_defined_written(&pr),
                  "%s (%s), seed %llu: a byte outside out or lse was written", where, desc,
                  (unsigned long long)seed);
        int64_t *rows;
        int64_t n = tu_pick_rows(&pr, &m.p, INT64_MAX, &rows);
        cr_expect(tu_check_accuracy(&pr, &m.p, rows, n, 1e-12, msg, sizeof msg), "%s (%s), seed %llu: %s",
                  where, desc, (unsigned long long)seed, msg);
        free(rows);
    }
    tm_mods_free(&m);
    tu_problem_free(&pr);
}

Test(modifier_grid, covers_every_pair_of_modifier_values)
{
    int a1 = 0, a2 = 0, l1 = 0, l2 = 0;
    cr_assert(mg_covers_every_pair(&a1, &a2, &l1, &l2), "axes %d and %d: value pair (%d, %d) is not covered",
              a1, a2, l1, l2);
}

static void check_grid_row(fa_context *ctx, mg_row *g)
{
    char where[96];
    snprintf(where, sizeof where, "grid row %d, blocks %d/%d", g->row, g->block_q, g->block_k);
    check_forward(ctx, &g->s, &g->spec, g->scale, &g->rng, where, g->seed);
}

Test(modifiers, f64_matches_oracle_to_1e_12_over_pairwise_modifier_grid)
{
    mg_run(FA_F64, check_grid_row);
}

Test(modifiers, f32_within_twice_naive_f32_error_over_pairwise_modifier_grid)
{
    mg_run(FA_F32, check_grid_row);
}

/* One modifier at a time, on one shape with grouped heads, Nq < Nk and odd head dims, on small
 * blocks (several key tiles) and automatic ones. */
static const struct {
    const char *name;
    tm_spec spec;
} alone[] = {
    {"window_left 9", {FA_CAUSAL_NONE, 9, -1, 0.0, 0, TM_BIAS_OFF, 0}},
    {"window_right 4", {FA_CAUSAL_NONE, -1, 4, 0.0, 0, TM_BIAS_OFF, 0}},
    {"softcap 2", {FA_CAUSAL_NONE, -1, -1, 2.0, 0, TM_BIAS_OFF, 0}},
    {"alibi", {FA_CAUSAL_NONE, -1, -1, 0.0, 1, TM_BIAS_OFF, 0}},
    {"key-padding bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_KEY_PADDING, 0}},
    {"key-padding bias, strides 0", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_KEY_PADDING_STRIDE0, 0}},
    {"full bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_FULL, 0}},
    {"batch-broadcast bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_BATCH_BROADCAST, 0}},
    {"head-broadcast bias", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_HEAD_BROADCAST, 0}},
    {"sinks", {FA_CAUSAL_NONE, -1, -1, 0.0, 0, TM_BIAS_OFF, 1}},
    {"all at once, causal", {FA_CAUSAL_BOTTOM_RIGHT, 12, 0, 5.0, 1, TM_BIAS_FULL, 1}},
};
#define N_ALONE ((int)(sizeof alone / sizeof alone[0]))

Test(modifiers, each_modifier_alone_matches_oracle_f32_and_f64)
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
                tu_shape s = {t ? FA_F64 : FA_F32, 2, 4, 2, 45, 77, 21, 15, (tu_layout)(c % 3)};
                tu_rng rng = tu_rng_make(seed + (uint64_t)(100 * b + 20 * t + c));
                char where[128];
                snprintf(where, sizeof where, "%s, blocks %d/%d", alone[c].name, o.block_q, o.block_k);
                check_forward(ctx, &s, &alone[c].spec, 0.0, &rng, where, seed);
            }
        fa_context_destroy(ctx);
    }
}
