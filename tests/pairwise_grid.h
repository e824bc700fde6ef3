/* SPDX-License-Identifier: BSD-3-Clause */
/* The pairwise-covering grid of shapes of the accuracy suites, forward and
 * backward (test_accuracy.c).
 *
 * Eight axes, each with at most 7 values; the 49 rows are the orthogonal array OA(49, 8, 7, 2):
 * row r = 7a + b has columns a, b, a + b, a + 2b, ..., a + 6b (mod 7), so any two columns take every
 * pair of values exactly once. An axis with fewer than 7 values reads its column mod its size, which
 * keeps every pair covered.
 *
 * Both directions walk the same array with the same axes, columns and small axes (causal mode, heads,
 * Dv, layout, dtype); only the values of the three 7-value axes (Nq, Nk, D) and the batch rule are
 * each suite's own, since those set the oracle's cost, which differs between the passes. pg_run
 * walks the rows the same way for both; what a row checks is the suite's. */
#ifndef FA_TEST_PAIRWISE_GRID_H
#define FA_TEST_PAIRWISE_GRID_H

#include <stdint.h>

#include "flashattn.h"
#include "util.h"

enum { PG_NQ, PG_NK, PG_D, PG_CAUSAL, PG_HEADS, PG_DV, PG_LAYOUT, PG_DTYPE, PG_AXES };
enum { PG_ROWS = 49 };

/* A suite's own values. The order of the values inside an axis is free (any order keeps every
 * pair covered); each suite picks one that keeps its oracle's work over the whole grid small. */
typedef struct {
    int64_t nq[7], nk[7], d[7];
    int64_t batch2_max_nq_nk; /* batch 2 where Nq·Nk <= this, otherwise batch 1 */
} pg_levels;

/* The values of the causal and dtype axes, in level order (level 0 is FA_CAUSAL_NONE / FA_F32). */
extern const fa_causal pg_causal_levels[3];
extern const fa_dtype pg_dtype_levels[2];

/* Entry (row, column) of the orthogonal array itself: 0 .. 6, for row 0 .. PG_ROWS - 1 and column
 * 0 .. 7. Any two columns take every pair of values exactly once, so another grid (e.g. the score
 * modifiers' of modifier_grid.h) may put its own axes on the columns. */
int pg_oa_value(int row, int column);
/* The value index (0 .. 6, fewer on the small axes) that row `row` (0 .. PG_ROWS - 1) takes on `axis`. */
int pg_level(int row, int axis);
/* The shape and parameters of grid row `row` with the suite's values: Dv = D at Dv level 0, another
 * value inside 1..512 at level 1; half the rows (odd ones) use an explicit scale 0.8/sqrt(D), half
 * the default 1/sqrt(D). */
void pg_case(const pg_levels *lv, int row, tu_shape *s, fa_params *p);
/* 1 when, for every two axes, every pair of their values appears in some row. Otherwise 0, and the
 * first pair that does not: axes *a1 < *a2 with values *l1, *l2. */
int pg_covers_every_pair(int *a1, int *a2, int *l1, int *l2);

/* One grid row as pg_run hands it to a suite's check. */
typedef struct {
    int row; /* 0 .. PG_ROWS - 1 */
    /* pg_case's shape and parameters */
    tu_shape s;
    fa_params p;
    uint64_t seed;  /* the test's seed, for messages */
    tu_rng rng;     /* seeded with seed + row: the row's inputs */
    char desc[256]; /* tu_shape_str(s, p) */
} pg_row;

typedef void pg_row_check(fa_context *ctx, pg_row *g);

/* Runs check on every row whose dtype is `dtype`, all on one fresh context, with the running
 * test's seed (tu_test_seed); cr_asserts that the context was created and that at least one row
 * ran. */
void pg_run(const pg_levels *lv, fa_dtype dtype, pg_row_check *check);

#endif
