/* SPDX-License-Identifier: BSD-3-Clause */
/* Score epilogue. Masks come from indices only: the library never builds an Nq x Nk mask. */
#include "epilogue.h"

#include <math.h>

static int64_t clamp(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

fa_key_range fa_visible_keys(const fa_problem *p, int64_t row)
{
    fa_key_range r = {0, p->kv_len};
    switch (p->causal) {
    case FA_CAUSAL_TOP_LEFT: r.end = clamp(row + 1, 0, p->kv_len); break;
    case FA_CAUSAL_BOTTOM_RIGHT: r.end = clamp(row + 1 + p->kv_len - p->q_len, 0, p->kv_len); break;
    default: break;
    }
    return r;
}

int fa_tile_fully_visible(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols)
{
    /* ranges are monotone in the row: the first row has the smallest end, the last the largest begin */
    return fa_visible_keys(p, row0).end >= col0 + cols && fa_visible_keys(p, row0 + rows - 1).begin <= col0;
}

fa_key_blocks fa_key_blocks_seen(const fa_problem *p, int64_t row0, int64_t rows, int64_t block_k)
{
    int64_t b = fa_visible_keys(p, row0).begin, e = fa_visible_keys(p, row0 + rows - 1).end;
    int64_t blocks = (p->kv_len + block_k - 1) / block_k;
    fa_key_blocks met = {clamp(b, 0, p->kv_len) / block_k, (clamp(e, 0, p->kv_len) + block_k - 1) / block_k};
    if (met.first > blocks) met.first = blocks;
    if (met.end < met.first || e <= b) met.end = met.first;
    return met;
}

int64_t fa_tile_cols_seen(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols)
{
    return clamp(fa_visible_keys(p, row0 + rows - 1).end - col0, 0, cols);
}

#define FA_DEFINE_MASK(T, NAME, VALUE)                                                                         \
    void NAME(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, T *s, int64_t ld)   \
    {                                                                                                          \
        for (int64_t r = 0; r < rows; r++) {                                                                   \
            fa_key_range keys = fa_visible_keys(p, row0 + r);                                                  \
            int64_t c0 = clamp(keys.begin - col0, 0, cols), c1 = clamp(keys.end - col0, c0, cols);             \
            for (int64_t c = 0; c < c0; c++) s[c * ld + r] = VALUE;                                            \
            for (int64_t c = c1; c < cols; c++) s[c * ld + r] = VALUE;                                         \
        }                                                                                                      \
    }

FA_DEFINE_MASK(float, fa_epilogue_f32, -INFINITY)
FA_DEFINE_MASK(double, fa_epilogue_f64, -INFINITY)
FA_DEFINE_MASK(float, fa_zero_masked_f32, 0.0f)
FA_DEFINE_MASK(double, fa_zero_masked_f64, 0.0)
