/* SPDX-License-Identifier: BSD-3-Clause */
/* Products over visible keys only; see visible_products.h for why. */
#include "drivers/visible_products.h"

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
