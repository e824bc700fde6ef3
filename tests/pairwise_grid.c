/* SPDX-License-Identifier: BSD-3-Clause */
/* The accuracy suites' pairwise-covering grid; see pairwise_grid.h. */
#include "pairwise_grid.h"

#include <criterion/criterion.h>
#include <math.h>

static const int64_t heads_levels[3][2] = {{1, 1}, {4, 2}, {4, 1}};
const fa_causal pg_causal_levels[3] = {FA_CAUSAL_NONE, FA_CAUSAL_TOP_LEFT, FA_CAUSAL_BOTTOM_RIGHT};
static const tu_layout layout_levels[3] = {TU_BHSD, TU_BSHD, TU_PACKED};
const fa_dtype pg_dtype_levels[2] = {FA_F32, FA_F64};
static const int axis_size[PG_AXES] = {7, 7, 7, 3, 3, 2, 3, 2};
/* Every axis on its own column, so any two axes see every pair. */
static const int axis_column[PG_AXES] = {7, 0, 4, 6, 5, 1, 3, 2};

int pg_oa_value(int row, int column)
{
    /* columns 0 and 1 are the row's two base-7 digits a, b; column c >= 2 is a + (c - 1)·b mod 7 */
    int a = row / 7, b = row % 7;
    return column == 0 ? a : column == 1 ? b : (a + (column - 1) * b) % 7;
}

int pg_level(int row, int axis)
{
    return pg_oa_value(row, axis_column[axis]) % axis_size[axis];
}

/* A value of Dv different from D (axis level 1), still inside 1..512. */
static int64_t other_dim_v(int64_t d)
{
    return d < 128 ? d + 13 : d / 2 + 7;
}

void pg_case(const pg_levels *lv, int row, tu_shape *s, fa_params *p)
{
    s->q_len = lv->nq[pg_level(row, PG_NQ)];
    s->kv_len = lv->nk[pg_level(row, PG_NK)];
    s->dim = lv->d[pg_level(row, PG_D)];
    s->dim_v = pg_level(row, PG_DV) == 0 ? s->dim : other_dim_v(s->dim);
    s->q_heads = heads_levels[pg_level(row, PG_HEADS)][0];
    s->kv_heads = heads_levels[pg_level(row, PG_HEADS)][1];
    s->layout = layout_levels[pg_level(row, PG_LAYOUT)];
    s->dtype = pg_dtype_levels[pg_level(row, PG_DTYPE)];
    s->batch = s->q_len * s->kv_len <= lv->batch2_max_nq_nk ? 2 : 1;
    *p = (fa_params)FA_PARAMS_INIT;
    p->causal = pg_causal_levels[pg_level(row, PG_CAUSAL)];
    /* Half the rows use an explicit scale, half the default 1/sqrt(D). */
    p->scale = (row % 2) ? 0.8 / sqrt((double)s->dim) : 0.0;
}

int pg_covers_every_pair(int *a1, int *a2, int *l1, int *l2)
{
    for (int x = 0; x < PG_AXES; x++)
        for (int y = x + 1; y < PG_AXES; y++)
            for (int lx = 0; lx < axis_size[x]; lx++)
                for (int ly = 0; ly < axis_size[y]; ly++) {
                    int found = 0;
                    for (int r = 0; r < PG_ROWS && !found; r++)
                        found = pg_level(r, x) == lx && pg_level(r, y) == ly;
                    if (!found) {
                        *a1 = x, *a2 = y, *l1 = lx, *l2 = ly;
                        return 0;
                    }
                }
    return 1;
}

void pg_run(const pg_levels *lv, fa_dtype dtype, pg_row_check *check)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx = NULL;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    int cases = 0;
    for (int r = 0; r < PG_ROWS; r++) {
        pg_row g;
        g.row = r;
        pg_case(lv, r, &g.s, &g.p);
        if (g.s.dtype != dtype) continue;
        cases++;
        g.seed = seed;
        g.rng = tu_rng_make(seed + (uint64_t)r);
        tu_shape_str(&g.s, &g.p, g.desc, sizeof g.desc);
        check(ctx, &g);
    }
    cr_assert_gt(cases, 0);
    fa_context_destroy(ctx);
}
