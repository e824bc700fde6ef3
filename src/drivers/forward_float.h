/* SPDX-License-Identifier: BSD-3-Clause */
/* The forward's tile products on the table's float kernels, the set forward_attend.h runs for
 * every call but an all-bf16 one on dot-product units. Included by forward_item.h with FA_T,
 * FA_SFX (f32/f64: also the kernel-table member), and FA_PAD_ELEMS defined, before
 * forward_attend.h with FA_SET = FA_SFX.
 *
 * Queries are packed transposed and scaled (qt[x][r] = scale·q[r][x]) once per item, so score
 * tiles come out scaled; the accumulator is row-major (acc[r][y]). Keys and values are read where
 * the caller keeps them, or from tiles of the arena filled per key tile when they are paged or
 * stored in another type (kv_tiles.h), or, for a decode step over a stored or paged cache, where they
 * lie (below), with the widened or copied tile's bits. */

#define FA_SET_ROWS FA_FLOAT_BLOCK_ROWS

/* A decode step (at most FA_HALF_ROWS rows an item) reads its keys and values where they lie: a
 * cache stored in another type (bf16, f16: 2 bytes an element; int8, FP8: 1), or paged, with the
 * table's scores_stored and accumulate_stored, which take each key's row from a list and give the
 * bits scores and accumulate give on the widened (or copied) tile (kernels.h): no copy is written
 * and read again, and a page of any size, one key included, is as good as a contiguous run. The
 * lists are made once per tile and kv head (stage_tile_, row_list_). */

/* The rows of keys [key0, key0 + n) of kv_head in `rows` (k or v) into list[0..n), and when `scale`
 * is given their scales (in `scales`, a quantized cache's) into scale[0..n); without it, a quantized
 * cache's scale lines are prefetched into L2 instead (the next tile's, listed ahead: a page's scales
 * lie apart from the next page's, so a paged cache's list would otherwise wait on a miss per page
 * and head when the tile comes, one per key in pages of 1 key). A paged cache is listed a page's
 * run at a time, one division per run (one per key and head in pages of 1 key put row_list_f32 at a
 * fifth of the library's time, perf). */
static void FA_NAME(list_rows_)(const fa_problem *p, const fa_view *rows, const fa_view *scales,
                                int64_t batch, int64_t kv_head, int64_t key0, int64_t n, const void **list,
                                float *scale)
{
    const int64_t elem = (int64_t)fa_elem_size(p->kv_type);
    const int fetch = !scale && scales->data;
    const int64_t step = rows->stride_seq * elem, scale_step = scales->stride_seq; /* key to key in a page */
    /* key0's page (its index in the table) and its row there; then page after page, from row 0 */
    int64_t index = p->pages ? key0 / p->page_size : 0, row = p->pages ? key0 % p->page_size : key0;
    for (int64_t i = 0; i < n; index++, row = 0) {
        int64_t page = batch, run = n - i;
        if (p->pages) {
            page = p->pages[index];
            if (p->page_size - row < run) run = p->page_size - row;
        }
        const char *at = fa_view_at(rows, (size_t)elem, page, kv_head, row);
        const float *first_scale = fa_view_at(scales, sizeof(float), page, kv_head, row); /* NULL: none */
        if (run == 1) { /* a page of 1 key: no loops */
            list[i] = at;
            if (scale) scale[i] = *first_scale;
            if (fetch) __builtin_prefetch(first_scale, 0, 2);
            i++;
            continue;
        }
        /* three plain loops, the scale lines fetched by their span: one loop for all (gcc vectorised its
         * 64-bit multiplications) with a compare per key took 3-5% more of an int8 step in L3 */
        for (int64_t j = 0; j < run; j++, at += step) list[i + j] = at;
        if (scale)
            for (int64_t j = 0; j < run; j++) scale[i + j] = first_scale[j * scale_step];
        if (fetch) { /* each line that holds a scale of the run, once */
            const int64_t apart = (scale_step < 0 ? -scale_step : scale_step) * (int64_t)sizeof(float);
            const uintptr_t a = (uintptr_t)first_scale, b = (uintptr_t)(first_scale + (run - 1) * scale_step);
            if (apart >= 64)
                for (int64_t j = 0; j < run; j++) __builtin_prefetch(first_scale + j * scale_step, 0, 2);
            else /* less than a line apart: every line of their span holds one */
                for (uintptr_t line = (a < b ? a : b) & ~(uintptr_t)63; line <= (a < b ? b : a); line += 64)
                    __builtin_prefetch((const void *)line, 0, 2);
        }
        i += run;
    }
}

/* A tile's list: keys [col0, col0 + n) with their scales, then FA_STORED_AHEAD more rows, which the
 * kernels only prefetch: the next keys', and past the last key the last key's again (their scales
 * prefetched here). For kernels that prefetch nothing (FA_ROWS_PREFETCH_NONE) the more rows are all
 * the last key's, looked up once: a page of one key is a lookup a key, which took 10-15% of the time
 * of a decode batch over such pages on Zen 3 (bench/results/2026-12-05-zen3-decode-prefetch.md). */
static void FA_NAME(row_list_)(const fa_problem *p, const fa_view *rows, const fa_view *scales, int64_t batch,
                               int64_t kv_head, int64_t col0, int64_t n, fa_rows_prefetch prefetch,
                               const void **list, float *scale)
{
    FA_NAME(list_rows_)(p, rows, scales, batch, kv_head, col0, n, list, scales->data ? scale : NULL);
    const int64_t left = prefetch == FA_ROWS_PREFETCH_NONE ? 0 : p->kv_len - (col0 + n),
                  ahead = left < FA_STORED_AHEAD ? left : FA_STORED_AHEAD;
    FA_NAME(list_rows_)(p, rows, scales, batch, kv_head, col0 + n, ahead, list + n, NULL);
    for (int64_t i = n + ahead; i < n + FA_STORED_AHEAD; i++) list[i] = list[n + ahead - 1];
}

/* The regions the items of a group share (forward_attend.h: a decode step's heads over one key
 * chunk), used by one item after the other: one block's score tile, and the key and value tiles a
 * paged or widened cache is staged in (NULL when read in place). A group read in place has no
 * shared score tile or row lists: each item holds its own, since it reads its tiles in token order
 * (every item's scores of a tile before any item's softmax: forward_attend.h, attend_tokens_). */
typedef struct {
    FA_T *s; /* NULL when in place */
    FA_T *k_tile, *v_tile;
} FA_SET_NAME(shared_);

/* One item's scratch and what it reads. */
typedef struct {
    FA_T *qt;    /* every query block packed transposed, D × FA_SET_ROWS apart */
    FA_T *q_few; /* read in place: the block's rows again, row by row (scores_stored) */
    int64_t q_few_stride;
    FA_T *s;                       /* the score tile: the group's, or the item's own when in place */
    FA_NAME(rows_state_) st;       /* the output rows, row max and row sum */
    FA_T *k_tile, *v_tile;         /* the group's staged tiles */
    const void **k_list, **v_list; /* the item's row lists for in-place reads */
    float *k_scales, *v_scales;
    FA_T *q_wide;       /* widened half-precision queries (NULL otherwise) */
    const FA_T *q_rows; /* the rows the packs read: the caller's or q_wide */
    int64_t q_stride;
    FA_NAME(stored_rows_) k, v;          /* the kv head's rows in the caller's cache (unused when paged) */
    int64_t kv_head, k_stride, v_stride; /* strides of the rows the kernels read */
    int direct;                          /* a decode step read in place, by row lists */
} FA_SET_NAME(item_);

/* Where one key tile's keys and values are read: the caller's rows or the arena's tiles (k, v:
 * key col0 first), or the cache itself (in_place: the staging item's row lists and scales, key col0
 * first, which every item of its kv head reads). */
typedef struct {
    const FA_T *k, *v;
    const void *const *k_list, *const *v_list;
    const float *k_scales, *v_scales;
    int64_t col0;
    int in_place;
} FA_SET_NAME(tile_);

/* The group's regions, then each item's, in this order (sizing and carving alike, plan/scratch.h). */
static void FA_SET_NAME(carve_shared_)(fa_scratch *sc, const fa_forward_job *job, FA_SET_NAME(shared_) * sh)
{
    const fa_problem *p = job->problem;
    const size_t e = sizeof(FA_T);
    const int64_t bk = job->block_k;
    /* the score tile: one query block's of at most FA_SET_ROWS rows */
    sh->s = job->in_place
                ? NULL
                : fa_scratch_take(sc, (size_t)bk, (size_t)fa_query_block_ld(job->ld, FA_SET_ROWS), e);
    sh->k_tile = sh->v_tile = NULL;
    if (job->paged || fa_kv_widens(p)) {
        sh->k_tile = fa_scratch_take(sc, (size_t)bk, (size_t)p->dim, e);
        sh->v_tile = fa_scratch_take(sc, (size_t)bk, (size_t)p->dim_v, e);
    }
}

static void FA_SET_NAME(carve_)(fa_scratch *sc, const fa_forward_job *job, const FA_SET_NAME(shared_) * sh,
                                FA_SET_NAME(item_) * item)
{
    const fa_problem *p = job->problem;
    const size_t e = sizeof(FA_T);
    const int64_t ld = job->ld, dv_pad = fa_round_up(p->dim_v, FA_PAD_ELEMS);
    const int64_t bk = job->block_k;
    item->s = sh->s;
    item->k_tile = sh->k_tile;
    item->v_tile = sh->v_tile;
    item->k_list = item->v_list = NULL;
    item->k_scales = item->v_scales = NULL;
    item->q_few = NULL;
    item->q_few_stride = fa_round_up(p->dim, FA_PAD_ELEMS);
    if (job->in_place) { /* some item is a decode step over a stored or paged cache */
        const int64_t few = job->schedule.block_q < FA_HALF_ROWS ? job->schedule.block_q : FA_HALF_ROWS;
        item->q_few = fa_scratch_take(sc, (size_t)few, (size_t)item->q_few_stride, e);
        const size_t s_ld = (size_t)fa_query_block_ld(ld, FA_SET_ROWS);
        item->s = fa_scratch_take(sc, (size_t)bk, s_ld, e);
        /* scores_stored leaves a tile's padding rows as they are (kernels.h): zeroed once here (NULL
         * while sizing), they stay defined, and no result reads them */
        if (item->s) memset(item->s, 0, (size_t)bk * s_ld * e);
        item->k_list = fa_scratch_take(sc, (size_t)(bk + FA_STORED_AHEAD), 1, sizeof(void *));
        item->v_list = fa_scratch_take(sc, (size_t)(bk + FA_STORED_AHEAD), 1, sizeof(void *));
        if (p->k_scale.data) {
            item->k_scales = fa_scratch_take(sc, (size_t)bk, 1, sizeof(float));
            item->v_scales = fa_scratch_take(sc, (size_t)bk, 1, sizeof(float));
        }
    }
    item->qt = fa_scratch_take(sc, (size_t)p->dim, (size_t)ld, e);
    item->st.acc = fa_scratch_take(sc, (size_t)job->schedule.block_q, (size_t)dv_pad, e);
    item->st.row_max = fa_scratch_take(sc, 1, (size_t)ld, e);
    item->st.row_sum = fa_scratch_take(sc, 1, (size_t)ld, e);
    item->st.acc_stride = dv_pad;
    /* half-precision queries are widened here, and a grouped problem's rows over several positions
     * gathered (fa_rows_stride): for a batch of sequences, when any sequence's are (job->gather_q) */
    const int gather = fa_q_widens(p) || job->gather_q;
    item->q_wide = gather ? fa_scratch_take(sc, (size_t)job->schedule.block_q, (size_t)p->dim, e) : NULL;
}

/* What the item reads: its query rows (widened first when half precision), its kv head's cache. */
static void FA_SET_NAME(item_begin_)(FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                     const fa_q_item *it)
{
    const fa_problem *p = job->problem;
    const int kv_tiles = item->k_tile != NULL;
    item->kv_head = it->q_head / p->group;
    if (!p->pages) {
        item->k = FA_NAME(stored_rows_at_)(p, &p->k, &p->k_scale, it->batch, item->kv_head, 0);
        item->v = FA_NAME(stored_rows_at_)(p, &p->v, &p->v_scale, it->batch, item->kv_head, 0);
    }
    item->k_stride = kv_tiles ? p->dim : p->k.stride_seq;
    item->v_stride = kv_tiles ? p->dim_v : p->v.stride_seq;
    /* the item's query rows: where they lie, evenly apart; or gathered (widened when stored in half
     * precision) into q_wide, when they are half precision or, in a grouped problem, span positions */
    const size_t q_elem = fa_elem_size(p->q_type);
    const char *head = fa_view_at(&p->q, q_elem, it->batch, it->q_head, 0);
    const int64_t stride = fa_rows_stride(p, it->row0, it->rows, p->q.stride_seq, p->q_sub_stride);
    item->q_rows =
        (const FA_T *)(const void *)(head + fa_row_offset(p, it->row0, p->q.stride_seq, p->q_sub_stride) *
                                                (int64_t)q_elem);
    item->q_stride = stride;
    if (item->q_wide) {
        for (int64_t r = 0; r < it->rows; r++) {
            const char *row =
                head + fa_row_offset(p, it->row0 + r, p->q.stride_seq, p->q_sub_stride) * (int64_t)q_elem;
            if (fa_q_widens(p))
                job->kernels->FA_SFX->widen(1, p->dim, row, 0, p->q_type, NULL, 0, item->q_wide + r * p->dim,
                                            p->dim);
            else
                memcpy(item->q_wide + r * p->dim, row, (size_t)p->dim * sizeof(FA_T));
        }
        item->q_rows = item->q_wide;
        item->q_stride = p->dim;
    }
    /* A decode step reads its cache in place where its job does (forward.c, reads_in_place: the
     * row lists exist then). Its item is one query block
     * (and the items of a group have the same rows), so the tile's fill (skipped when in place) and
     * the block's products decide on the same rows and columns. */
    _Static_assert(FA_HALF_ROWS <= FA_SET_ROWS, "a decode item is one query block");
    item->direct = item->k_list && it->rows <= FA_HALF_ROWS;
}

/* Query block r0.. of the item: its packed queries and its accumulator rows. */
static void *FA_SET_NAME(block_queries_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                         int64_t r0)
{
    return item->qt + r0 * job->problem->dim; /* every block before it is FA_SET_ROWS wide */
}

static FA_T *FA_SET_NAME(block_acc_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job, int64_t r0)
{
    (void)job;
    return item->st.acc + r0 * item->st.acc_stride;
}

/* Whether every key block the block meets is fully visible to it: then a decode item reads each
 * tile in place (stage_tile_) by scores_stored, and its transposed queries are never read. */
static int FA_SET_NAME(sees_every_key_met_)(const fa_forward_job *job, const FA_NAME(query_block_) * b)
{
    const fa_problem *p = job->problem;
    const int64_t c0 = b->first * job->block_k,
                  c1 = b->end * job->block_k < p->kv_len ? b->end * job->block_k : p->kv_len;
    return c1 <= c0 || fa_tile_fully_visible(p, b->row0, b->rows, c0, c1 - c0);
}

/* The block's queries, scaled: score tiles then come out scaled. A decode item (one block) reads
 * its rows as they are, scaled, by scores_stored, and its transposed ones only on a mask's edge: it
 * packs those (ld rows, mostly padding) only when it has an edge. */
static void FA_SET_NAME(pack_block_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                     const fa_q_item *it, const FA_NAME(query_block_) * b)
{
    const fa_problem *p = job->problem;
    const FA_T *q = item->q_rows + (b->row0 - it->row0) * item->q_stride, scale = (FA_T)p->scale;
    if (!item->direct || !FA_SET_NAME(sees_every_key_met_)(job, b))
        job->kernels->FA_SFX->pack_transposed(b->rows, p->dim, q, item->q_stride, scale, (FA_T *)b->queries,
                                              b->ld);
    if (!item->direct) return;
    /* scale·q rounded once, as pack_transposed rounds it (kernels.h): the same queries either way */
    for (int64_t r = 0; r < b->rows; r++)
        for (int64_t x = 0; x < item->q_few_stride; x++)
            item->q_few[r * item->q_few_stride + x] = x < p->dim ? scale * q[r * item->q_stride + x] : 0;
}

static void FA_SET_NAME(zero_acc_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                   const fa_q_item *it)
{
    (void)job;
    for (int64_t x = 0; x < it->rows * item->st.acc_stride; x++) item->st.acc[x] = 0;
}

/* The keys [col0, col0 + cols) of a tile, where the blocks will read them, for kernels that prefetch
 * the rows of lists as `prefetch` says (row_list_): job->reads.tokens in a group's tiles read in
 * token order (forward_attend.h, attend_tokens_), job->reads.rows in the others (stage_tile_). */
static void FA_SET_NAME(stage_listed_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                       const fa_q_item *it, int64_t col0, int64_t cols,
                                       fa_rows_prefetch prefetch, FA_SET_NAME(tile_) * t)
{
    const fa_problem *p = job->problem;
    const FA_CAT(fa_kernels_, FA_SFX) *kern = job->kernels->FA_SFX;
    t->col0 = col0;
    t->in_place = item->direct && fa_tile_fully_visible(p, it->row0, it->rows, col0, cols);
    t->k = item->k_tile;
    t->v = item->v_tile;
    t->k_list = item->k_list, t->v_list = item->v_list;
    t->k_scales = item->k_scales, t->v_scales = item->v_scales;
    if (t->in_place) { /* read where they lie, by the block's products: their rows listed */
        FA_NAME(row_list_)
        (p, &p->k, &p->k_scale, it->batch, item->kv_head, col0, cols, prefetch, item->k_list, item->k_scales);
        FA_NAME(row_list_)
        (p, &p->v, &p->v_scale, it->batch, item->kv_head, col0, cols, prefetch, item->v_list, item->v_scales);
    } else if (p->pages) {
        FA_NAME(gather_pages_)(kern, p, 0, item->kv_head, col0, cols, item->k_tile, item->v_tile);
    } else if (item->k_tile) {
        FA_NAME(stored_rows_)
        k = FA_NAME(stored_rows_skip_)(p, item->k, col0), v = FA_NAME(stored_rows_skip_)(p, item->v, col0);
        FA_NAME(tile_rows_)(kern, p, 0, cols, p->dim, &k, item->k_tile);
        FA_NAME(tile_rows_)(kern, p, 0, cols, p->dim_v, &v, item->v_tile);
    } else {
        t->k = (const FA_T *)(const void *)item->k.at + col0 * item->k_stride;
        t->v = (const FA_T *)(const void *)item->v.at + col0 * item->v_stride;
    }
}

static void FA_SET_NAME(stage_tile_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                     const fa_q_item *it, int64_t col0, int64_t cols, FA_SET_NAME(tile_) * t)
{
    FA_SET_NAME(stage_listed_)(item, job, it, col0, cols, job->reads.rows, t);
}

/* The score tile's ld: a tile read in place (full) for one row, with no modifier or dropout between
 * the products, lays the row's scores key after key (ld 1: online_softmax then steps a vector of
 * keys at a time, kernels.h); any other tile, including this block's tiles on a mask's edge, a
 * vector of rows a key (b->ld). The row's softmax state is the same in both layouts, bit for bit. */
static int64_t FA_SET_NAME(tile_ld_)(const fa_forward_job *job, const FA_NAME(query_block_) * b,
                                     const FA_SET_NAME(tile_) * t, int full)
{
    const fa_problem *p = job->problem;
    return t->in_place && full && b->rows == 1 && !fa_problem_modifies_scores(p) && p->dropout_p == 0.0
               ? 1
               : b->ld;
}

/* The block's scores against keys [col0, col0 + cols) of the tile, scaled (the scale is in qt). */
static void FA_SET_NAME(scores_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                 const FA_NAME(query_block_) * b, const FA_SET_NAME(tile_) * t, int64_t col0,
                                 int64_t cols, int full)
{
    const fa_problem *p = job->problem;
    const FA_CAT(fa_kernels_, FA_SFX) *kern = job->kernels->FA_SFX;
    if (t->in_place && full) { /* a decode step reads its cache in place, but on a mask's edge */
        const int64_t at = col0 - t->col0;
        kern->scores_stored(b->rows, FA_SET_NAME(tile_ld_)(job, b, t, full), cols, p->dim, item->q_few,
                            item->q_few_stride, t->k_list + at, p->kv_type,
                            p->k_scale.data ? t->k_scales + at : NULL, job->reads.rows, item->s);
        return;
    }
    FA_CAT(fa_scores_visible_, FA_SFX)
    (kern, p, b->row0, b->rows, col0, cols, p->dim, (const FA_T *)b->queries, b->ld,
     t->k + (col0 - t->col0) * item->k_stride, item->k_stride, item->s, fa_problem_modifies_scores(p));
}

/* The online-softmax step on the block's masked, modified scores (a tile of ld, tile_ld_): P in the
 * score tile, acc rescaled.
 * With dropout, P holds the kept probabilities times 1/(1 - p) and the row sums stay undropped. */
static void FA_SET_NAME(softmax_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                  const fa_q_item *it, const FA_NAME(query_block_) * b, int64_t col0,
                                  int64_t cols, int64_t ld)
{
    const fa_problem *p = job->problem;
    const FA_CAT(fa_kernels_, FA_SFX) *kern = job->kernels->FA_SFX;
    kern->online_softmax(b->rows, ld, cols, item->s, b->row_max, b->row_sum, b->acc, item->st.acc_stride,
                         item->st.acc_stride);
    if (p->dropout_p != 0.0) FA_CAT(fa_dropout_probs_, FA_SFX)
    (kern, p, it->batch, it->q_head, b->row0, b->rows, col0, cols, item->s, ld);
}

/* The softmax step, then acc += P·V over the same keys (masked columns are zero in P; on a mask's
 * edge only the keys each row sees are summed). */
static void FA_SET_NAME(softmax_accumulate_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                             const fa_q_item *it, const FA_NAME(query_block_) * b,
                                             const FA_SET_NAME(tile_) * t, int64_t col0, int64_t cols,
                                             int full)
{
    const fa_problem *p = job->problem;
    const FA_CAT(fa_kernels_, FA_SFX) *kern = job->kernels->FA_SFX;
    const int64_t acc_stride = item->st.acc_stride, ld = FA_SET_NAME(tile_ld_)(job, b, t, full);
    FA_SET_NAME(softmax_)(item, job, it, b, col0, cols, ld);
    if (t->in_place && full) {
        const int64_t at = col0 - t->col0;
        kern->accumulate_stored(b->rows, cols, p->dim_v, item->s, ld, t->v_list + at, p->kv_type,
                                p->v_scale.data ? t->v_scales + at : NULL, job->reads.rows, b->acc,
                                acc_stride);
        return;
    }
    FA_CAT(fa_accumulate_visible_, FA_SFX)
    (kern, p, b->row0, b->rows, col0, cols, p->dim_v, item->s, b->ld,
     t->v + (col0 - t->col0) * item->v_stride, item->v_stride, b->acc, acc_stride);
}

/* Token order (forward_attend.h, attend_tokens_): a decode group's tiles read in place, every item's
 * part of a run of keys before the next run's, so that a [token][head][dim] cache streams token row
 * after token row. The item's score tile holds the whole tile; each run writes and reads its columns
 * [c0, c0 + run) there, with the same kernels on the same rows as the tile in one call: each key's
 * score and each accumulator element take the same operations in the same order (the kernels' key
 * blocks are per key, their accumulation per element in key order), so the bits do not change.
 * The runs prefetch as the CPU's choice for token order says (job->reads.tokens). */
#define FA_SET_TOKENS 1

static void FA_SET_NAME(scores_run_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                     const FA_NAME(query_block_) * b, const FA_SET_NAME(tile_) * t,
                                     int64_t c0, int64_t run)
{
    const fa_problem *p = job->problem;
    const int64_t ld = FA_SET_NAME(tile_ld_)(job, b, t, 1);
    job->kernels->FA_SFX->scores_stored(b->rows, ld, run, p->dim, item->q_few, item->q_few_stride,
                                        t->k_list + c0, p->kv_type, p->k_scale.data ? t->k_scales + c0 : NULL,
                                        job->reads.tokens, item->s + c0 * ld);
}

static void FA_SET_NAME(accumulate_run_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job,
                                         const FA_NAME(query_block_) * b, const FA_SET_NAME(tile_) * t,
                                         int64_t c0, int64_t run)
{
    const fa_problem *p = job->problem;
    const int64_t ld = FA_SET_NAME(tile_ld_)(job, b, t, 1);
    job->kernels->FA_SFX->accumulate_stored(b->rows, run, p->dim_v, item->s + c0 * ld, ld, t->v_list + c0,
                                            p->kv_type, p->v_scale.data ? t->v_scales + c0 : NULL,
                                            job->reads.tokens, b->acc, item->st.acc_stride);
}

/* The item's rows, as write_rows_ and the split-KV chunks read them: the accumulator itself. */
static FA_NAME(rows_state_)
    FA_SET_NAME(item_end_)(const FA_SET_NAME(item_) * item, const fa_forward_job *job, const fa_q_item *it)
{
    (void)job, (void)it;
    return item->st;
}
