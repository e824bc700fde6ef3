/* SPDX-License-Identifier: BSD-3-Clause */
/* The forward's item, written once for every set of tile products: included by forward_item.h
 * after a set (forward_float.h, forward_dot.h) with FA_T, FA_SFX and FA_PAD_ELEMS of the
 * accumulation type and FA_SET (the set's suffix: f32, f64, dot) defined. The set gives its rows
 * per query block (FA_SET_ROWS), its item and tile types, and the operations that differ between
 * float kernels and dot-product units: carve_, item_begin_, block_queries_, block_acc_,
 * pack_block_, zero_acc_, stage_tile_, scores_, softmax_accumulate_, item_end_; and FA_SET_TOKENS,
 * whether it reads a decode group's tiles in token order (attend_tokens_: then also stage_listed_,
 * scores_run_, tile_ld_, softmax_ and accumulate_run_). Everything else,
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

/* The value modifiers on every score of a block's tile [col0, col0 + cols), then the masks on a
 * tile that is not fully visible. */
static void FA_SET_NAME(modify_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                 const fa_q_item *it, const FA_NAME(query_block_) * b, int64_t col0,
                                 int64_t cols, int full)
{
    const fa_problem *p = job->problem;
    if (fa_problem_modifies_scores(p)) {
        fa_score_mods mods = fa_score_mods_of(p, sizeof(FA_T), it->batch, it->q_head, b->row0, b->rows, col0);
        job->kernels->FA_SFX->modify(&mods, b->ld, cols, item->s, NULL);
    }
    if (!full) FA_CAT(fa_epilogue_, FA_SFX)(p, b->row0, b->rows, col0, cols, item->s, b->ld);
}

/* One query block's online-softmax step over the columns [col0, col0 + cols) of a key tile: the
 * scores, the modifiers and masks, then the softmax, dropout's mask on its probabilities, and the
 * accumulation. */
static void FA_SET_NAME(attend_tile_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                      const fa_q_item *it, const FA_NAME(query_block_) * b,
                                      const FA_SET_NAME(tile_) * t, int64_t col0, int64_t cols)
{
    const int full = fa_tile_fully_visible(job->problem, b->row0, b->rows, col0, cols);
    FA_SET_NAME(scores_)(item, job, b, t, col0, cols, full);
    FA_SET_NAME(modify_)(item, job, it, b, col0, cols, full);
    FA_SET_NAME(softmax_accumulate_)(item, job, it, b, t, col0, cols, full);
}

#if FA_SET_TOKENS
/* Keys a token-order run covers: whole key blocks of the scores kernel (FA_FEW_ROWS_KEYS: at most 8).
 * Runs of 16 and 32 keys, and runs of 4 KiB of a head's rows (16 bf16 keys, 32 int8 at D = 128),
 * measured slower (bench/results/2026-12-05-decode-token-order-amd-zen4.md). */
#define FA_TOKEN_RUN 8

/* Whether a group reads its tiles in token order (attend_tokens_), once for all its tiles: two items
 * or more, each one query block read in place, over key rows the CPU reads so (job->reads,
 * plan/block_sizes.h: fa_decode_reads_for). */
static int FA_SET_NAME(reads_tokens_)(const FA_SET_NAME(item_) * items, const fa_forward_job *job,
                                      const int64_t *blocks, int n)
{
    if (n < 2 || !job->reads.token_order) return 0;
    for (int m = 0; m < n; m++)
        if (!items[m].direct || blocks[m] != 1) return 0;
    return 1;
}

/* Key tile kb of a decode group in token order (the set's runs: forward_float.h): every item's scores
 * of a run of FA_TOKEN_RUN keys before the next run's, then each item's softmax step, then every
 * item's P·V of a run before the next run's. Items over different kv heads of a [token][head][dim]
 * cache then read each token row whole, in order, as memory streams it, where item after item read
 * a head's part of every token row of the tile (a 4 KiB stride at f32, H8, D128, which no hardware
 * prefetcher follows). Each item computes what it computes alone. Only for a group that
 * reads_tokens_ and a tile every item sees whole; returns 0, having done nothing, otherwise. */
static int FA_SET_NAME(attend_tokens_)(FA_SET_NAME(item_) * items, const fa_forward_job *job,
                                       const fa_q_item *its, int n, int64_t kb, int64_t block0,
                                       int64_t tile_cols)
{
    const fa_problem *p = job->problem;
    FA_NAME(query_block_) b[FA_GROUP_ITEMS];
    for (int m = 0; m < n; m++) {
        b[m] = FA_SET_NAME(block_at_)(job, &its[m], 0, &items[m]);
        if (kb < b[m].first || kb >= b[m].end ||
            !fa_tile_fully_visible(p, b[m].row0, b[m].rows, block0, tile_cols))
            return 0;
    }
    FA_SET_NAME(tile_) t[FA_GROUP_ITEMS];
    for (int m = 0; m < n; m++)
        FA_SET_NAME(stage_listed_)(&items[m], job, &its[m], block0, tile_cols, job->reads.tokens, &t[m]);
    for (int64_t c0 = 0; c0 < tile_cols; c0 += FA_TOKEN_RUN) {
        const int64_t run = tile_cols - c0 < FA_TOKEN_RUN ? tile_cols - c0 : FA_TOKEN_RUN;
        for (int m = 0; m < n; m++) FA_SET_NAME(scores_run_)(&items[m], job, &b[m], &t[m], c0, run);
    }
    for (int m = 0; m < n; m++) {
        FA_SET_NAME(modify_)(&items[m], job, &its[m], &b[m], block0, tile_cols, 1);
        FA_SET_NAME(softmax_)
        (&items[m], job, &its[m], &b[m], block0, tile_cols, FA_SET_NAME(tile_ld_)(job, &b[m], &t[m], 1));
    }
    for (int64_t c0 = 0; c0 < tile_cols; c0 += FA_TOKEN_RUN) {
        const int64_t run = tile_cols - c0 < FA_TOKEN_RUN ? tile_cols - c0 : FA_TOKEN_RUN;
        for (int m = 0; m < n; m++) FA_SET_NAME(accumulate_run_)(&items[m], job, &b[m], &t[m], c0, run);
    }
    return 1;
}
#endif

/* The online softmax of a group of n query items over the keys [key_lo, key_hi) each may see (key_lo
 * a multiple of block_k), in the arena; each item's rows go to states[i], for write_rows_ or a split
 * chunk. The items of a group (at most FA_GROUP_ITEMS: a decode step's heads of one batch entry,
 * forward_item.h) walk the key tiles together: for each tile, every item's blocks in item order, the
 * tile's rows staged once for the items of one kv head. In a cache whose rows lie token by token
 * ([token][head][dim]) the group then reads each token row once, whole, instead of one head's part of
 * it per item. Each item computes exactly what it computes alone (the same tiles, columns and
 * order), so grouping changes no bit. */
static void FA_SET_NAME(attend_group_)(const fa_forward_job *job, fa_arena *arena, const fa_q_item *its,
                                       int n, int64_t key_lo, int64_t key_hi, FA_NAME(rows_state_) * states)
{
    const fa_problem *p = job->problem;
    const int64_t bk = job->block_k;
    FA_SET_NAME(shared_) shared;
    FA_SET_NAME(item_) items[FA_GROUP_ITEMS];
    int64_t blocks[FA_GROUP_ITEMS];
    fa_scratch scratch = fa_scratch_carver(arena);
    FA_SET_NAME(carve_shared_)(&scratch, job, &shared);
    int64_t first = INT64_MAX, end = 0; /* the key blocks some item meets, within [key_lo, key_hi) */
    for (int i = 0; i < n; i++) {
        const fa_q_item *it = &its[i];
        FA_SET_NAME(item_) *item = &items[i];
        blocks[i] = (it->rows + FA_SET_ROWS - 1) / FA_SET_ROWS;
        FA_SET_NAME(carve_)(&scratch, job, &shared, item);
        FA_SET_NAME(item_begin_)(item, job, it);
        for (int64_t g = 0; g < blocks[i]; g++) {
            FA_NAME(query_block_) b = FA_SET_NAME(block_at_)(job, it, g, item);
            FA_SET_NAME(pack_block_)(item, job, it, &b);
        }
        for (int64_t r = 0; r < job->ld; r++) {
            item->st.row_max[r] = -(FA_T)INFINITY;
            item->st.row_sum[r] = 0;
        }
        FA_SET_NAME(zero_acc_)(item, job, it);
        /* the key blocks the item meets (masked for all its rows elsewhere) */
        fa_key_blocks met = fa_key_blocks_seen(p, it->row0, it->rows, bk);
        if (met.first < first) first = met.first;
        if (met.end > end) end = met.end;
    }
    if (first < key_lo / bk) first = key_lo / bk;
    if (end > (key_hi + bk - 1) / bk) end = (key_hi + bk - 1) / bk;
#if FA_SET_TOKENS
    const int tokens = FA_SET_NAME(reads_tokens_)(items, job, blocks, n);
#endif
    for (int64_t kb = first; kb < end; kb++) {
        const int64_t block0 = kb * bk, tile_cols = p->kv_len - block0 < bk ? p->kv_len - block0 : bk;
#if FA_SET_TOKENS
        if (tokens && FA_SET_NAME(attend_tokens_)(items, job, its, n, kb, block0, tile_cols)) continue;
#endif
        for (int i = 0; i < n;) {
            /* items i..j - 1 read one kv head: its tile is staged once, over the columns some row of
             * theirs sees */
            int j = i;
            fa_key_range seen = {tile_cols, 0};
            for (; j < n && items[j].kv_head == items[i].kv_head; j++) {
                fa_key_range mine = fa_tile_cols_seen(p, its[j].row0, its[j].rows, block0, tile_cols);
                if (mine.end == mine.begin) continue;
                if (mine.begin < seen.begin) seen.begin = mine.begin;
                if (mine.end > seen.end) seen.end = mine.end;
            }
            if (seen.end > seen.begin) {
                FA_SET_NAME(tile_) t;
                FA_SET_NAME(stage_tile_)
                (&items[i], job, &its[i], block0 + seen.begin, seen.end - seen.begin, &t);
                for (int m = i; m < j; m++)
                    for (int64_t g = 0; g < blocks[m]; g++) {
                        FA_NAME(query_block_) b = FA_SET_NAME(block_at_)(job, &its[m], g, &items[m]);
                        if (kb < b.first || kb >= b.end) continue;
                        fa_key_range cols = fa_tile_cols_seen(p, b.row0, b.rows, block0, tile_cols);
                        if (cols.end == cols.begin) continue;
                        FA_SET_NAME(attend_tile_)
                        (&items[m], job, &its[m], &b, &t, block0 + cols.begin, cols.end - cols.begin);
                    }
            }
            i = j;
        }
    }
    for (int i = 0; i < n; i++) states[i] = FA_SET_NAME(item_end_)(&items[i], job, &its[i]);
}

/* One query item alone: a group of one. */
static FA_NAME(rows_state_) FA_SET_NAME(attend_)(const fa_forward_job *job, fa_arena *arena,
                                                 const fa_q_item *it, int64_t key_lo, int64_t key_hi)
{
    FA_NAME(rows_state_) st;
    FA_SET_NAME(attend_group_)(job, arena, it, 1, key_lo, key_hi, &st);
    return st;
}

/* The arena bytes of a group of n items on this set: its carve, sized. */
static size_t FA_SET_NAME(attend_plan_)(const fa_forward_job *job, int n)
{
    FA_SET_NAME(shared_) shared;
    FA_SET_NAME(item_) item;
    fa_scratch sizer = fa_scratch_sizer();
    FA_SET_NAME(carve_shared_)(&sizer, job, &shared);
    for (int i = 0; i < n; i++) FA_SET_NAME(carve_)(&sizer, job, &shared, &item);
    return sizer.bytes;
}

#undef FA_SET_ROWS
#undef FA_SET_TOKENS
