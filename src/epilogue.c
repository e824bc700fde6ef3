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
    case FA_CAUSAL_NONE: break;
    case FA_CAUSAL_TOP_LEFT: r.end = clamp(row + 1, 0, p->kv_len); break;
    case FA_CAUSAL_BOTTOM_RIGHT: r.end = clamp(row + 1 + p->kv_len - p->q_len, 0, p->kv_len); break;
    default:
        /* Never reached: validate.c refuses any other value and the drivers refuse problems whose
         * masks fa_epilogue_knows() does not. Were it reached, the row would see no key (zeros,
         * lse = -inf), never a key that an unknown mask might hide. No assert here: a call in this
         * per-row helper would make every caller save its registers around it. */
        r.end = 0;
        break;
    }
    return r;
}

int fa_epilogue_knows(const fa_problem *p)
{
    fa_causal c = p->causal;
    return c == FA_CAUSAL_NONE || c == FA_CAUSAL_TOP_LEFT || c == FA_CAUSAL_BOTTOM_RIGHT;
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

/* What the masks hide becomes -inf in a score tile (fa_epilogue_*), 0 in a score gradient
 * (fa_zero_masked_*). */
#define FA_T float
#define FA_MASK_NAME fa_epilogue_f32
#define FA_MASK_VALUE -INFINITY
#include "masked_fill.h"
#undef FA_T
#undef FA_MASK_NAME
#undef FA_MASK_VALUE

#define FA_T double
#define FA_MASK_NAME fa_epilogue_f64
#define FA_MASK_VALUE -INFINITY
#include "masked_fill.h"
#undef FA_T
#undef FA_MASK_NAME
#undef FA_MASK_VALUE

#define FA_T float
#define FA_MASK_NAME fa_zero_masked_f32
#define FA_MASK_VALUE 0.0f
#include "masked_fill.h"
#undef FA_T
#undef FA_MASK_NAME
#undef FA_MASK_VALUE

#define FA_T double
#define FA_MASK_NAME fa_zero_masked_f64
#define FA_MASK_VALUE 0.0
#include "masked_fill.h"
#undef FA_T
#undef FA_MASK_NAME
#undef FA_MASK_VALUE
