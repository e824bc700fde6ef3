/* SPDX-License-Identifier: BSD-3-Clause */
/* The score modifiers' pairwise-covering grid; see modifier_grid.h. */
#include "modifier_grid.h"

#include <criterion/criterion.h>
#include <math.h>

#include "pairwise_grid.h"

static const int axis_size[MG_AXES] = {3, 4, 3, 3, 2, TM_BIAS_KINDS, 2, 2};
static const int64_t window_left_levels[4] = {-1, 0, 3, 40};
static const int64_t window_right_levels[3] = {-1, 0, 2};
static const double softcap_levels[3] = {0.0, 1.5, 30.0};

int mg_level(int row, int axis)
{
    return pg_oa_value(row, axis) % axis_size[axis]; /* axis a on column a */
}

int mg_covers_every_pair(int *a1, int *a2, int *l1, int *l2)
{
    for (int x = 0; x < MG_AXES; x++)
        for (int y = x + 1; y < MG_AXES; y++)
            for (int lx = 0; lx < axis_size[x]; lx++)
                for (int ly = 0; ly < axis_size[y]; ly++) {
                    int found = 0;
                    for (int r = 0; r < PG_ROWS && !found; r++)
                        found = mg_level(r, x) == lx && mg_level(r, y) == ly;
                    if (!found) {
                        *a1 = x, *a2 = y, *l1 = lx, *l2 = ly;
                        return 0;
                    }
                }
    return 1;
}

/* batch, q heads, kv heads, Nq, Nk, D, Dv, layout (the dtype is the row's) */
static const tu_shape shapes[7] = {
    {FA_F32, 2, 4, 2, 37, 61, 19, 13, TU_BHSD},   {FA_F32, 1, 3, 1, 70, 45, 33, 40, TU_BSHD},
    {FA_F32, 2, 2, 2, 1, 90, 8, 5, TU_PACKED},    {FA_F32, 1, 4, 1, 53, 53, 5, 7, TU_BHSD},
    {FA_F32, 2, 6, 3, 29, 100, 47, 31, TU_BSHD},  {FA_F32, 1, 2, 1, 100, 17, 11, 11, TU_PACKED},
    {FA_F32, 1, 1, 1, 128, 130, 64, 24, TU_BHSD},
};
static const int blocks[3][2] = {{0, 0}, {13, 24}, {5, 7}};

static void make_row(int r, uint64_t seed, mg_row *g)
{
    g->row = r;
    g->s = shapes[(3 * r) % 7];
    g->s.dtype = mg_level(r, MG_DTYPE) ? FA_F64 : FA_F32;
    g->spec.causal = (fa_causal)mg_level(r, MG_CAUSAL);
    g->spec.window_left = window_left_levels[mg_level(r, MG_WINDOW_LEFT)];
    g->spec.window_right = window_right_levels[mg_level(r, MG_WINDOW_RIGHT)];
    g->spec.softcap = softcap_levels[mg_level(r, MG_SOFTCAP)];
    g->spec.alibi = mg_level(r, MG_ALIBI);
    g->spec.bias = (tm_bias_kind)mg_level(r, MG_BIAS);
    g->spec.sinks = mg_level(r, MG_SINKS);
    g->scale = (r % 2) ? 0.8 / sqrt((double)g->s.dim) : 0.0;
    g->block_q = blocks[r % 3][0];
    g->block_k = blocks[r % 3][1];
    g->seed = seed;
    g->rng = tu_rng_make(seed + (uint64_t)r);
}

void mg_run(fa_dtype dtype, mg_row_check *check)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[3];
    for (int c = 0; c < 3; c++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.block_q = blocks[c][0];
        o.block_k = blocks[c][1];
        cr_assert_eq(fa_context_create(&ctx[c], &o), FA_OK);
    }
    int cases = 0;
    for (int r = 0; r < PG_ROWS; r++) {
        mg_row g;
        make_row(r, seed, &g);
        if (g.s.dtype != dtype) continue;
        cases++;
        check(ctx[r % 3], &g);
    }
    cr_assert_gt(cases, 0);
    for (int c = 0; c < 3; c++) fa_context_destroy(ctx[c]);
}
