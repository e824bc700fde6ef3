/* SPDX-License-Identifier: BSD-3-Clause */
/* Products over visible keys only; see visible_products.h for why. */
#include "drivers/visible_products.h"

#include <math.h>

#include "drivers/epilogue.h"

typedef struct {
    int64_t begin, end;
} span;

/* The tile columns [begin, end) that one query row sees. */
static span row_columns(const fa_problem *p, int64_t row, int64_t col0, int64_t cols)
{
    fa_key_range keys = fa_visible_keys(p, row);
    span s = {fa_clamp64(keys.begin - col0, 0, cols), fa_clamp64(keys.end - col0, 0, cols)};
    if (s.end < s.begin) s.end = s.begin;
    return s;
}

/* Columns every row of the block sees: ranges are monotone, so the last row has the largest
 * begin and the first row the smallest end. */
static span common_columns(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols)
{
    span s = {row_columns(p, row0 + rows - 1, col0, cols).begin, row_columns(p, row0, col0, cols).end};
    if (s.end < s.begin) s.end = s.begin;
    return s;
}

/* Rows of the block that see every column, and the rows that see one column c. */
static span rows_seeing(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t c_first,
                        int64_t c_last, int64_t cols)
{
    span s = {rows, rows};
    for (int64_t r = 0; r < rows; r++) {
        span cs = row_columns(p, row0 + r, col0, cols);
        int sees = cs.begin <= c_first && cs.end > c_last;
        if (sees && s.begin == rows) s.begin = r;
        if (!sees && s.begin != rows) {
            s.end = r;
            break;
        }
    }
    return s;
}

/* The rows of a block that see some column of [c_begin, c_end), asked for columns in increasing
 * order (rows_seeing_some). With one row per position the band gives them in closed form
 * (fa_band_of); otherwise ranges, monotone in the row, give [first row whose range ends after
 * c_begin, first row whose range begins at c_end or later), found by a walk whose ends only grow
 * (`from`, the previous answer): O(rows + calls) look-ups a tile. */
typedef struct {
    const fa_problem *p;
    int64_t row0, rows, col0;
    int banded;
    fa_band band;
    span from;
} rows_walk;

static rows_walk rows_walk_of(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0)
{
    rows_walk w = {.p = p, .row0 = row0, .rows = rows, .col0 = col0};
    w.banded = fa_band_of(p, &w.band);
    return w;
}

static span rows_seeing_some(rows_walk *w, int64_t c_begin, int64_t c_end)
{
    if (w->banded) { /* key c is seen by rows [c + band.first, c + band.last] */
        /* the run's first and last key, counted from the block's first row's position */
        const int64_t key_a = w->col0 + c_begin - w->row0, key_z = w->col0 + c_end - 1 - w->row0;
        span s = {w->band.first == FA_BAND_OPEN_BELOW ? 0 : fa_clamp64(key_a + w->band.first, 0, w->rows),
                  w->band.last == FA_BAND_OPEN_ABOVE ? w->rows
                                                     : fa_clamp64(key_z + w->band.last + 1, 0, w->rows)};
        if (s.end < s.begin) s.end = s.begin;
        return s;
    }
    span s = w->from;
    while (s.begin < w->rows && fa_visible_keys(w->p, w->row0 + s.begin).end <= w->col0 + c_begin) s.begin++;
    if (s.end < s.begin) s.end = s.begin;
    while (s.end < w->rows && fa_visible_keys(w->p, w->row0 + s.end).begin < w->col0 + c_end) s.end++;
    w->from = s;
    return s;
}

#define FA_T   float
#define FA_SFX f32
#include "drivers/visible_accumulate.h"
#undef FA_T
#undef FA_SFX

#define FA_T   double
#define FA_SFX f64
#include "drivers/visible_accumulate.h"
#undef FA_T
#undef FA_SFX
