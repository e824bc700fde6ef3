/* SPDX-License-Identifier: BSD-3-Clause */
/* The score epilogue: everything between the two tile products, in one place, computed from
 * indices. Forward and backward both use it, in two parts:
 * - the value modifiers (softcap, ALiBi, bias), applied to every score a driver computes by the
 *   kernel table's `modify` from the fa_score_mods this file describes for each tile;
 * - the index masks (causal, window), which define the visible key range of every row: drivers
 *   visit only tiles some row sees, trim them to the columns some row sees, and mask element-wise
 *   only the tiles that are not fully visible.
 * The scale (alone: log2 e is not folded in, see kernels/kernels.h) is folded into the packed
 * queries, so score tiles arrive scaled. */
#ifndef FA_EPILOGUE_H
#define FA_EPILOGUE_H

#include <stdint.h>

#include "kernels/kernels.h"
#include "problem.h"

/* The value modifiers of the tile of query rows [row0, row0 + rows) of (batch, q_head) against keys
 * col0.. (elem: bytes per element of the problem's dtype), for the kernel table's `modify`. */
fa_score_mods fa_score_mods_of(const fa_problem *p, size_t elem, int64_t batch, int64_t q_head, int64_t row0,
                               int64_t rows, int64_t col0);

/* Keys [begin, end) that query row `row` may see. end <= begin means none. Both are monotone
 * non-decreasing in `row`, which is what lets a driver bound a whole query block by its first
 * and last rows. */
typedef struct {
    int64_t begin, end;
} fa_key_range;

fa_key_range fa_visible_keys(const fa_problem *p, int64_t row);

/* The most keys one row can see: Nk, or less under a window (an upper bound from its width). */
int64_t fa_row_key_span(const fa_problem *p);

/* Whether the epilogue computes every mask of p. validate.c admits only such problems; the drivers
 * check again and refuse the others (FA_ERR_ARG), so that an unknown mask is never run as none. */
int fa_epilogue_knows(const fa_problem *p);

/* Whether every row of [row0, row0 + rows) sees every key of [col0, col0 + cols). */
int fa_tile_fully_visible(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols);

/* The key blocks [first, end) of block_k keys of which some row of [row0, row0 + rows) sees a key.
 * Visible ranges are monotone in the row, so the rows see keys [b, e) with b the first row's begin
 * and e the last row's end, and the blocks met are those overlapping [b, e): contiguous. Every
 * driver walks exactly these blocks of a query block; the others are masked for all its rows and
 * never computed. */
typedef struct {
    int64_t first, end;
} fa_key_blocks;

fa_key_blocks fa_key_blocks_seen(const fa_problem *p, int64_t row0, int64_t rows, int64_t block_k);

/* The columns [begin, end) of the tile [col0, col0 + cols), relative to col0, that some row of
 * [row0, row0 + rows) sees: from the first row's begin to the last row's end. The columns outside
 * are masked for every row, so drivers compute only these: on a causal diagonal, a query block of
 * 64 rows against a key tile of 512 needs at most 64 + its offset of them; under a window the
 * leading columns are dropped as well. Dropped columns would only have added exact zeros, so no
 * result changes, and every plan trims a tile the same way. */
fa_key_range fa_tile_cols_seen(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols);

/* On the transposed score tile s[c][r] (row stride ld) whose corner is (query row0, key col0):
 * entries the masks hide become -inf. Only tiles that are not fully visible need it. */
void fa_epilogue_f32(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, float *s,
                     int64_t ld);
void fa_epilogue_f64(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, double *s,
                     int64_t ld);

/* The same positions set to 0: the backward applies it to the score gradient on a mask's edge,
 * where p = 0 but the dO·Vᵀ term may hold a NaN from a key the row does not see. */
void fa_zero_masked_f32(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, float *t,
                        int64_t ld);
void fa_zero_masked_f64(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                        double *t, int64_t ld);

#endif
