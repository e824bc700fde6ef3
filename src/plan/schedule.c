/* SPDX-License-Identifier: BSD-3-Clause */
/* Work decomposition for the forward pass: one item per (batch, head, query block). */
#include "plan/schedule.h"

#include "plan/mask.h"

fa_q_schedule fa_q_schedule_make(const fa_problem *p, int64_t block_q)
{
    fa_q_schedule s;
    s.block_q = block_q;
    s.q_blocks = (p->q_len + block_q - 1) / block_q;
    s.count = p->batch * p->q_heads * s.q_blocks;
    return s;
}

fa_q_item fa_q_schedule_item(const fa_q_schedule *s, const fa_problem *p, int64_t index)
{
    fa_q_item it;
    /* Under a causal mask later query blocks see more keys; handing them out first, across every
     * batch entry and head, lets the dynamic loop finish with the cheap ones, so threads end
     * together even when each has only a few items. Order only: every item is still computed the
     * same way by whichever thread takes it. */
    int64_t block = index % s->q_blocks, bh = index / s->q_blocks;
    if (p->causal != FA_CAUSAL_NONE) {
        const int64_t heads = p->batch * p->q_heads;
        block = s->q_blocks - 1 - index / heads;
        bh = index % heads;
    }
    it.q_head = bh % p->q_heads;
    it.batch = bh / p->q_heads;
    it.row0 = block * s->block_q;
    it.rows = p->q_len - it.row0 < s->block_q ? p->q_len - it.row0 : s->block_q;
    return it;
}

/* A chunk spans at least this many key tiles, so the merge stays cheap next to the work. */
#define SPLIT_MIN_TILES 2

/* The most keys any query block sees, first row's begin to last row's end (ranges are monotone):
 * Nk without a window, about the window's width with one. At most FA_SPLIT_DECODE_ITEMS blocks. */
static int64_t widest_key_span(const fa_problem *p, const fa_q_schedule *s)
{
    int64_t widest = 0;
    for (int64_t row0 = 0; row0 < p->q_len; row0 += s->block_q) {
        int64_t last = p->q_len - row0 < s->block_q ? p->q_len - 1 : row0 + s->block_q - 1;
        int64_t span = fa_visible_keys(p, last).end - fa_visible_keys(p, row0).begin;
        if (span > widest) widest = span;
    }
    return widest;
}

fa_kv_split fa_kv_split_make(const fa_problem *p, const fa_q_schedule *s, int64_t units, int64_t block_k,
                             size_t partial_bytes_per_row)
{
    fa_kv_split none = {1, p->kv_len};
    const int64_t target = p->q_len <= FA_DECODE_ROWS ? FA_SPLIT_DECODE_ITEMS : FA_SPLIT_TARGET_ITEMS;
    if (units == 0 || units >= target) return none;
    int64_t splits = (target + units - 1) / units;
    /* chunks of a query block's own keys: a window leaves most of a long sequence's chunks empty */
    int64_t by_length = widest_key_span(p, s) / (SPLIT_MIN_TILES * block_k);
    if (splits > by_length) splits = by_length;
    size_t rows = (size_t)(s->count * s->block_q);
    int64_t by_memory = (int64_t)(FA_SPLIT_MAX_PARTIAL_BYTES / (rows * partial_bytes_per_row));
    if (splits > by_memory) splits = by_memory;
    if (splits < 2) return none;
    /* whole tiles per chunk, so every chunk's tiles sit on the same grid as an unsplit run */
    int64_t tiles = (p->kv_len + block_k - 1) / block_k;
    int64_t chunk = (tiles + splits - 1) / splits * block_k;
    fa_kv_split out = {(p->kv_len + chunk - 1) / chunk, chunk};
    return out.splits < 2 ? none : out;
}
