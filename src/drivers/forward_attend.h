/* SPDX-License-Identifier: BSD-3-Clause */
/* The forward's item, written once for every set of tile products: included by forward_item.h
 * after a set (forward_float.h, forward_dot.h) with FA_T, FA_SFX and FA_PAD_ELEMS of the
 * accumulation type and FA_SET (the set's suffix: f32, f64, dot) defined. The set gives its rows
 * per query block (FA_SET_ROWS), its item and tile types, and the operations that differ between
 * float kernels and dot-product units: carve_, item_begin_, block_queries_, block_acc_,
 * pack_block_, zero_acc_, stage_tile_, scores_, softmax_accumulate_, item_end_. Everything else,
 * the key-block range, the columns each block sees, the value modifiers and the masks between the
 * two products, is here, once.
 *
 * An item of more rows than FA_SET_ROWS runs as query blocks of FA_SET_ROWS rows, all of them over
 * one key tile before the next: each block computes exactly what an item of its rows alone
 * computes (the same tiles, columns and order), while the tile's keys and values are read from
 * memory once for all of them. */

/* Query block g of an item, as the set's products see it. (The item's loop over key blocks already
 * keeps to a split chunk's keys.) */
static FA_NAME(query_block_) FA_SET_NAME(block_at_)(const fa_forward_job *job, const fa_q_item *it, int64_t g,
                                                    const FA_SET_NAME(item_) * item)
{
    const fa_problem *p = job->problem;
    const int64_t r0 = g * FA_SET_ROWS;
    FA_NAME(query_block_) b;
    b.row0 = it->row0 + r0;
    b.rows = fa_query_block_rows(it->rows, g, FA_SET_ROWS);
    b.ld = fa_round_up(b.rows, FA_PAD_ELEMS);
    b.queries = FA_SET_NAME(block_queries_)(item, job, r0);
    b.acc = FA_SET_NAME(block_acc_)(item, job, r0);
    b.row_max = item->st.row_max + r0;
    b.row_sum = item->st.row_sum + r0;
    fa_key_blocks met = fa_key_blocks_seen(p, b.row0, b.rows, job->block_k);
    b.first = met.first;
    b.end = met.end;
    return b;
}

/* One query block's online-softmax step over the columns [col0, col0 + cols) of a key tile: the
 * scores, the value modifiers on every score, the masks on a tile that is not fully visible, then
 * the softmax and the accumulation. */
static void FA_SET_NAME(attend_tile_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                      const fa_q_item *it, const FA_NAME(query_block_) * b,
                                      const FA_SET_NAME(tile_) * t, int64_t col0, int64_t cols)
{
    const fa_problem *p = job->problem;
    const int full = fa_tile_fully_visible(p, b->row0, b->rows, col0, cols);
    FA_SET_NAME(scores_)(item, job, b, t, col0, cols, full);
    if (fa_problem_modifies_scores(p)) {
        fa_score_mods mods = fa_score_mods_of(p, sizeof(FA_T), it->batch, it->q_head, b->row0, b->rows, col0);
        job->kernels->FA_SFX->modify(&mods, b->ld, cols, item->s, NULL);
    }
    if (!full) FA_CAT(fa_epilogue_, FA_SFX)(p, b->row0, b->rows, col0, cols, item->s, b->ld);
    FA_SET_NAME(softmax_accumulate_)(item, job, b, t, col0, cols, full);
}

/* Runs the online softmax of query item `it` over the keys [key_lo, key_hi) it may see (key_lo a
 * multiple of block_k), in the arena; returns the rows for write_rows_ or a split chunk. */
static FA_NAME(rows_state_) FA_SET_NAME(attend_)(const fa_forward_job *job, fa_arena *arena, const fa_q_item *it,
                                                 int64_t key_lo, int64_t key_hi)
{
    const fa_problem *p = job->problem;
    const int64_t bk = job->block_k, blocks = (it->rows + FA_SET_ROWS - 1) / FA_SET_ROWS;
    FA_SET_NAME(item_) item;
    fa_scratch scratch = fa_scratch_carver(arena);
    FA_SET_NAME(carve_)(&scratch, job, &item);
    FA_SET_NAME(item_begin_)(&item, job, it);
    for (int64_t g = 0; g < blocks; g++) {
        FA_NAME(query_block_) b = FA_SET_NAME(block_at_)(job, it, g, &item);
        FA_SET_NAME(pack_block_)(&item, job, it, &b);
    }
    for (int64_t r = 0; r < job->ld; r++) {
        item.st.row_max[r] = -(FA_T)INFINITY;
        item.st.row_sum[r] = 0;
    }
    FA_SET_NAME(zero_acc_)(&item, job, it);

    /* The key blocks the item meets (masked for all its rows elsewhere), within [key_lo, key_hi) */
    fa_key_blocks met = fa_key_blocks_seen(p, it->row0, it->rows, bk);
    int64_t first = met.first > key_lo / bk ? met.first : key_lo / bk;
    int64_t end = met.end < (key_hi + bk - 1) / bk ? met.end : (key_hi + bk - 1) / bk;
    for (int64_t kb = first; kb < end; kb++) {
        int64_t block0 = kb * bk, tile_cols = p->kv_len - block0 < bk ? p->kv_len - block0 : bk;
        /* only the columns some row of the item sees */
        fa_key_range seen = fa_tile_cols_seen(p, it->row0, it->rows, block0, tile_cols);
        if (seen.end == seen.begin) continue;
        FA_SET_NAME(tile_) t;
        FA_SET_NAME(stage_tile_)(&item, job, it, block0 + seen.begin, seen.end - seen.begin, &t);
        for (int64_t g = 0; g < blocks; g++) {
            FA_NAME(query_block_) b = FA_SET_NAME(block_at_)(job, it, g, &item);
            if (kb < b.first || kb >= b.end) continue;
            fa_key_range mine = fa_tile_cols_seen(p, b.row0, b.rows, block0, tile_cols);
            if (mine.end == mine.begin) continue;
            FA_SET_NAME(attend_tile_)(&item, job, it, &b, &t, block0 + mine.begin, mine.end - mine.begin);
        }
    }
    return FA_SET_NAME(item_end_)(&item, job, it);
}

/* The arena bytes of one item on this set: its carve, sized. */
static size_t FA_SET_NAME(attend_plan_)(const fa_forward_job *job)
{
    FA_SET_NAME(item_) item;
    fa_scratch sizer = fa_scratch_sizer();
    FA_SET_NAME(carve_)(&sizer, job, &item);
    return sizer.bytes;
}

#undef FA_SET_ROWS
