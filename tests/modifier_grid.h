/* SPDX-License-Identifier: BSD-3-Clause */
/* The pairwise-covering grid of the score-modifier suites, forward and backward
 * (test_modifiers.c).
 *
 * Eight axes, each on its own column of the orthogonal array OA(49, 8, 7, 2) of pairwise_grid.h
 * (an axis with fewer than 7 values reads its column mod its size, which keeps every pair
 * covered), so any two of them take every pair of their values in some row:
 *   causal        none, top-left, bottom-right
 *   window_left   -1, 0, 3 (small), 40 (large)
 *   window_right  -1, 0, 2
 *   softcap       0, 1.5 (most scores capped), 30 (few)
 *   ALiBi         off, on (slopes 2^(-8(h + 1)/Hq))
 *   bias          off, key padding [B][1][1][Nk] with -inf padding, the same with strides 0,
 *                 full [B][Hq][Nq][Nk] (gaps, some -inf), broadcast over batch [1][Hq][Nq][Nk],
 *                 broadcast over heads [B][1][Nq][Nk]
 *   sinks         off, on
 *   dtype         f32, f64
 * The shape is not an axis: row r takes shape (3r mod 7) of a list with grouped and multi-query
 * heads, Nq < Nk, Nq > Nk and Nq = 1, odd D and Dv != D, and every layout; and one of three
 * contexts by r mod 3: automatic blocks, 13/24 and 5/7 (tiles that a window meets partly, or skips
 * whole). Half the rows use an explicit scale. */
#ifndef FA_TEST_MODIFIER_GRID_H
#define FA_TEST_MODIFIER_GRID_H

#include <stdint.h>

#include "flashattn.h"
#include "modifiers.h"
#include "util.h"

enum {
    MG_CAUSAL,
    MG_WINDOW_LEFT,
    MG_WINDOW_RIGHT,
    MG_SOFTCAP,
    MG_ALIBI,
    MG_BIAS,
    MG_SINKS,
    MG_DTYPE,
    MG_AXES
};

/* The value index that row `row` (0 .. PG_ROWS - 1) takes on `axis`. */
int mg_level(int row, int axis);
/* 1 when every pair of values of every two axes appears in some row; otherwise 0, and the first
 * pair that does not (axes *a1 < *a2, values *l1, *l2). */
int mg_covers_every_pair(int *a1, int *a2, int *l1, int *l2);

/* One grid row as mg_run hands it to a suite's check. */
typedef struct {
    int row;
    tu_shape s;
    tm_spec spec;
    double scale;         /* 0 (1/sqrt(D)) or explicit */
    int block_q, block_k; /* of the context the row runs on (0: automatic) */
    uint64_t seed;        /* the test's seed, for messages */
    tu_rng rng;           /* seeded with seed + row: the row's inputs and modifiers */
} mg_row;

typedef void mg_row_check(fa_context *ctx, mg_row *g);

/* Runs check on every row whose dtype is `dtype`, on the row's context, with the running test's
 * seed (tu_test_seed); cr_asserts that the contexts were created and that rows ran. */
void mg_run(fa_dtype dtype, mg_row_check *check);

#endif
