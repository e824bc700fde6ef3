/* SPDX-License-Identifier: BSD-3-Clause */
/* The masks' geometry, from indices only: which keys a query row sees under the causal mask and the
 * windows, and from that which key blocks an item meets and which columns of a tile its rows see.
 * The schedule, the block sizes and the drivers all ask it; applying the masks to a tile is the
 * drivers' epilogue (drivers/epilogue.h). */
#ifndef FA_MASK_H
#define FA_MASK_H

#include <stdint.h>

#include "plan/problem.h"

/* Keys [begin, end) that query row `row` may see. end <= begin means none. Both are monotone
 * non-decreasing in `row`, which is what lets a driver bound a whole query block by its first
 * and last rows. */
typedef struct {
    int64_t begin, end;
} fa_key_range;

fa_key_range fa_visible_keys(const fa_problem *p, int64_t row);

static inline int64_t fa_clamp64(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* The rows that see each key, in closed form: with one row per position (row_group 1), row r sees
 * key c in [0, Nk) exactly when c + first <= r <= c + last, first being FA_BAND_OPEN_BELOW when no
 * mask bounds it (no causal mask and no right window), last FA_BAND_OPEN_ABOVE when no left window
 * does. The mask fill asks this once per tile instead of two range look-ups per row and column.
 * Returns 0 for grouped rows (several rows per position), where the caller looks rows up. */
typedef struct {
    int64_t first, last;
} fa_band;
#define FA_BAND_OPEN_BELOW INT64_MIN
#define FA_BAND_OPEN_ABOVE INT64_MAX

int fa_band_of(const fa_problem *p, fa_band *band);

/* The most keys one row can see: Nk, or less under a window (an upper bound from its width). */
int64_t fa_row_key_span(const fa_problem *p);

/* Whether the epilogue computes every mask of p. validate.c admits only such problems; the drivers
 * check again and refuse the others (FA_ERR_ARG), so that an unknown mask is never run as none. */
int fa_masks_known(const fa_problem *p);

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

#endif
