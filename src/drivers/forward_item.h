/* SPDX-License-Identifier: BSD-3-Clause */
/* Forward work items, written once for both element types: included by forward.c with FA_T,
 * FA_SFX (f32/f64: also the kernel-table member), FA_LOG, FA_EXP, FA_PAD_ELEMS
 * (the padding unit of accumulator rows, kernels.h) and FA_PAIRS_PATH (1 for float: the bf16
 * dot-product path of forward_pairs.h, and FA_HALF_DIRECT: the half-cache decode reads above) defined. */

#include "template.h"

/* The online-softmax state of one query item: unnormalized output rows (stride acc_stride),
 * running max and sum per row. */
typedef struct {
    FA_T *acc, *row_max, *row_sum;
    int64_t acc_stride;
} FA_NAME(rows_state_);

/* The run of keys from t on that lie in one page of a paged pool (at most `left` keys): the
 * rows of kv_head there, at k and v, p->k.stride_seq and p->v.stride_seq elements apart (of
 * p->kv_type: bytes, since a half-precision pool widens as it is copied). */
typedef struct {
    const char *k, *v;
    int64_t rows;
} FA_NAME(page_run_);

static FA_NAME(page_run_) FA_NAME(page_run_at_)(const fa_problem *p, int64_t kv_head, int64_t t, int64_t left)
{
    FA_NAME(page_run_) run;
    size_t elem = fa_elem_size(p->kv_type);
    int64_t row0 = t % p->page_size, page = p->pages[t / p->page_size];
    run.rows = p->page_size - row0 < left ? p->page_size - row0 : left;
    run.k = (const char *)fa_view_at(&p->k, elem, page, kv_head, row0);
    run.v = (const char *)fa_view_at(&p->v, elem, page, kv_head, row0);
    return run;
}

/* Asks for a run's rows ahead of their copy, into L2 (so more misses can be in flight than L1
 * holds). */
static void FA_NAME(prefetch_run_)(const fa_problem *p, const FA_NAME(page_run_) * run)
{
    const int64_t elem = (int64_t)fa_elem_size(p->kv_type);
    for (int64_t r = 0; r < run->rows; r++) {
        for (int64_t x = 0; x < p->dim * elem; x += 64)
            __builtin_prefetch(run->k + r * p->k.stride_seq * elem + x, 0, 2);
        for (int64_t y = 0; y < p->dim_v * elem; y += 64)
            __builtin_prefetch(run->v + r * p->v.stride_seq * elem + y, 0, 2);
    }
}

/* `rows` rows of one of k and v (`dim` wide, `stride` elements of p->kv_type apart) into a tile of
 * rows `dim` apart: FA_T rows, copied or widened when the cache is half precision; or, with
 * `keep`, rows of the cache's own type copied as they are (the bf16 dot-product path,
 * forward_pairs.h). */
static void FA_NAME(tile_rows_)(const FA_CAT(fa_kernels_, FA_SFX) * kern, const fa_problem *p, int keep,
                                int64_t rows, int64_t dim, const char *src, int64_t stride, void *dst)
{
    if (!keep && fa_dtype_is_half(p->kv_type)) {
        kern->widen(rows, dim, (const uint16_t *)(const void *)src, stride, p->kv_type, dst, dim);
        return;
    }
    const size_t elem = fa_elem_size(p->kv_type);
    for (int64_t r = 0; r < rows; r++)
        memcpy((char *)dst + r * dim * (int64_t)elem, src + r * stride * (int64_t)elem, (size_t)dim * elem);
}

/* Paged keys (p->pages, the problem of one sequence): keys [col0, col0 + cols) of kv_head copied
 * from their pages into contiguous tiles, so the kernels see what a contiguous cache gives them,
 * bit for bit. The copy reads each key once, as the kernels would; it stays in L2 for them. It
 * walks the tile page by page (one division per page, not per key), asking for the next page's
 * rows while it copies this one's: in a [pages][page_size][Hkv][D] pool one head's rows lie Hkv·D
 * elements apart, each in another 4 KiB page, where the hardware prefetchers (which stop at page
 * boundaries) never start, so without it every row waited for memory on its own. */
static void FA_NAME(gather_pages_)(const FA_CAT(fa_kernels_, FA_SFX) * kern, const fa_problem *p, int keep,
                                   int64_t kv_head, int64_t col0, int64_t cols, void *k_tile, void *v_tile)
{
    const int64_t elem = keep ? (int64_t)fa_elem_size(p->kv_type) : (int64_t)sizeof(FA_T); /* of the tiles */
    if (cols <= 0) return;
    FA_NAME(page_run_) run = FA_NAME(page_run_at_)(p, kv_head, col0, cols);
    FA_NAME(prefetch_run_)(p, &run);
    for (int64_t c = 0; c < cols;) {
        int64_t after = c + run.rows;
        FA_NAME(page_run_) next = {NULL, NULL, 0};
        if (after < cols) {
            next = FA_NAME(page_run_at_)(p, kv_head, col0 + after, cols - after);
            FA_NAME(prefetch_run_)(p, &next);
        }
        FA_NAME(tile_rows_)
        (kern, p, keep, run.rows, p->dim, run.k, p->k.stride_seq, (char *)k_tile + c * p->dim * elem);
        FA_NAME(tile_rows_)
        (kern, p, keep, run.rows, p->dim_v, run.v, p->v.stride_seq, (char *)v_tile + c * p->dim_v * elem);
        c = after;
        run = next;
    }
}

#if FA_HALF_DIRECT
/* A decode step over a half-precision cache (at most FA_HALF_ROWS rows an item) reads the keys and
 * values where they lie, 2 bytes an element, with the table's scores_half and accumulate_half,
 * which give the bits scores and accumulate give on the widened tile (kernels.h): no widened copy
 * is written and read again. Paged keys go a page run at a time, in key order: a score does not
 * depend on its neighbours, and each accumulator element adds the runs' keys in the order one call
 * over the whole tile would. */
static void FA_NAME(scores_direct_)(const FA_CAT(fa_kernels_, FA_SFX) * kern, const fa_problem *p,
                                    int64_t kv_head, const char *k, int64_t rows, int64_t ld, int64_t col0,
                                    int64_t cols, const FA_T *qt, FA_T *s)
{
    if (!p->pages) {
        kern->scores_half(rows, ld, cols, p->dim, qt,
                          (const uint16_t *)(const void *)k + col0 * p->k.stride_seq, p->k.stride_seq,
                          p->kv_type, s);
        return;
    }
    for (int64_t c = 0; c < cols;) {
        FA_NAME(page_run_) run = FA_NAME(page_run_at_)(p, kv_head, col0 + c, cols - c);
        kern->scores_half(rows, ld, run.rows, p->dim, qt, (const uint16_t *)(const void *)run.k,
                          p->k.stride_seq, p->kv_type, s + c * ld);
        c += run.rows;
    }
}

static void FA_NAME(accumulate_direct_)(const FA_CAT(fa_kernels_, FA_SFX) * kern, const fa_problem *p,
                                        int64_t kv_head, const char *v, int64_t rows, int64_t ld,
                                        int64_t col0, int64_t cols, const FA_T *w, FA_T *acc,
                                        int64_t acc_stride)
{
    if (!p->pages) {
        kern->accumulate_half(rows, cols, p->dim_v, w, ld,
                              (const uint16_t *)(const void *)v + col0 * p->v.stride_seq, p->v.stride_seq,
                              p->kv_type, acc, acc_stride);
        return;
    }
    for (int64_t c = 0; c < cols;) {
        FA_NAME(page_run_) run = FA_NAME(page_run_at_)(p, kv_head, col0 + c, cols - c);
        kern->accumulate_half(rows, run.rows, p->dim_v, w + c * ld, ld, (const uint16_t *)(const void *)run.v,
                              p->v.stride_seq, p->kv_type, acc, acc_stride);
        c += run.rows;
    }
}
#endif

/* One query block of an item, as the kernels see it: at most FA_FORWARD_SUB_ROWS rows (row0 of the
 * problem), their packed queries (ld apart) and their part of the item's softmax state. */
typedef struct {
    int64_t row0, rows, ld, first, end; /* [first, end): the key blocks it meets */
    FA_T *qt;
    FA_NAME(rows_state_) st;
} FA_NAME(sub_block_);

/* (The item's loop over key blocks already keeps to a split chunk's keys.) */
static FA_NAME(sub_block_) FA_NAME(sub_block_at_)(const fa_forward_job *job, const fa_q_item *it, int64_t g,
                                                  FA_T *qt, const FA_NAME(rows_state_) * st)
{
    const fa_problem *p = job->problem;
    const int64_t bk = job->block_k, r0 = g * FA_FORWARD_SUB_ROWS;
    FA_NAME(sub_block_) sb;
    sb.row0 = it->row0 + r0;
    sb.rows = fa_query_block_rows(it->rows, g, FA_FORWARD_SUB_ROWS);
    sb.ld = fa_round_up(sb.rows, FA_PAD_ELEMS);
    sb.qt = qt + r0 * p->dim; /* every block before it is FA_FORWARD_SUB_ROWS wide: D x FA_FORWARD_SUB_ROWS */
    sb.st = *st;
    sb.st.acc = st->acc + r0 * st->acc_stride;
    sb.st.row_max = st->row_max + r0;
    sb.st.row_sum = st->row_sum + r0;
    fa_key_blocks met = fa_key_blocks_seen(p, sb.row0, sb.rows, bk);
    sb.first = met.first;
    sb.end = met.end;
    return sb;
}

/* Where one key tile's keys and values are read: the caller's rows or the arena's tiles (k, v:
 * key col0 first, k_stride and v_stride elements apart), or, for a decode step over a half cache
 * (in_place), the cache itself (cache_k, cache_v: the rows of kv_head, read by key index). */
typedef struct {
    const FA_T *k, *v;
    int64_t col0, k_stride, v_stride;
    int in_place;
    const char *cache_k, *cache_v;
    int64_t kv_head;
} FA_NAME(key_tile_);

/* The block's scores against keys [col0, col0 + cols) of the tile, scaled (the scale is in qt). */
static void FA_NAME(tile_scores_)(const FA_CAT(fa_kernels_, FA_SFX) * kern, const fa_problem *p,
                                  const FA_NAME(sub_block_) * sb, const FA_NAME(key_tile_) * t, int in_place,
                                  int64_t col0, int64_t cols, FA_T *s)
{
#if FA_HALF_DIRECT
    if (in_place) {
        FA_NAME(scores_direct_)(kern, p, t->kv_head, t->cache_k, sb->rows, sb->ld, col0, cols, sb->qt, s);
        return;
    }
#else
    (void)in_place; /* no half cache is read in place in this type */
#endif
    kern->scores(sb->rows, sb->ld, cols, p->dim, sb->qt, t->k + (col0 - t->col0) * t->k_stride, t->k_stride,
                 s);
}

/* acc += P·V for the block over the same keys (P in s, masked columns zero). */
static void FA_NAME(tile_accumulate_)(const FA_CAT(fa_kernels_, FA_SFX) * kern, const fa_problem *p,
                                      const FA_NAME(sub_block_) * sb, const FA_NAME(key_tile_) * t,
                                      int in_place, int64_t col0, int64_t cols, const FA_T *s)
{
#if FA_HALF_DIRECT
    if (in_place) {
        FA_NAME(accumulate_direct_)
        (kern, p, t->kv_head, t->cache_v, sb->rows, sb->ld, col0, cols, s, sb->st.acc, sb->st.acc_stride);
        return;
    }
#else
    (void)in_place;
#endif
    FA_CAT(fa_accumulate_visible_, FA_SFX)
    (kern, p, sb->row0, sb->rows, col0, cols, p->dim_v, s, sb->ld, t->v + (col0 - t->col0) * t->v_stride,
     t->v_stride, sb->st.acc, sb->st.acc_stride);
}

/* One query block's online-softmax step over the columns [col0, col0 + cols) of a key tile. */
static void FA_NAME(attend_tile_)(const fa_forward_job *job, const fa_q_item *it,
                                  const FA_NAME(sub_block_) * sb, const FA_NAME(key_tile_) * t, int64_t col0,
                                  int64_t cols, FA_T *s)
{
    const fa_problem *p = job->problem;
    const FA_CAT(fa_kernels_, FA_SFX) *kern = job->kernels->FA_SFX;
    const int full = fa_tile_fully_visible(p, sb->row0, sb->rows, col0, cols);
    /* a decode step over a half cache reads it in place, but on a mask's edge */
    const int in_place = t->in_place && full;
    FA_NAME(tile_scores_)(kern, p, sb, t, in_place, col0, cols, s);
    if (fa_problem_modifies_scores(p)) {
        fa_score_mods mods =
            fa_score_mods_of(p, sizeof(FA_T), it->batch, it->q_head, sb->row0, sb->rows, col0);
        kern->modify(&mods, sb->ld, cols, s, NULL);
    }
    if (!full) FA_CAT(fa_epilogue_, FA_SFX)(p, sb->row0, sb->rows, col0, cols, s, sb->ld);
    kern->online_softmax(sb->rows, sb->ld, cols, s, sb->st.row_max, sb->st.row_sum, sb->st.acc,
                         sb->st.acc_stride, sb->st.acc_stride);
    FA_NAME(tile_accumulate_)(kern, p, sb, t, in_place, col0, cols, s);
}

/* Runs the online softmax of query item `it` over the keys [key_lo, key_hi) it may see
 * (key_lo a multiple of block_k), in the arena. An item of more than FA_FORWARD_SUB_ROWS rows is run as
 * query blocks of FA_FORWARD_SUB_ROWS rows, all of them over one key tile before the next: each block
 * computes exactly what an item of its rows alone computes (the same tiles, columns and order),
 * while the tile's keys and values are read from memory once for all of them. */
static FA_NAME(rows_state_) FA_NAME(attend_)(const fa_forward_job *job, fa_arena *arena, const fa_q_item *it,
                                             int64_t key_lo, int64_t key_hi)
{
    const fa_problem *p = job->problem;
    const FA_CAT(fa_kernels_, FA_SFX) *kern = job->kernels->FA_SFX;
    int64_t bk = job->block_k, ld = job->ld, dv_pad = fa_round_up(p->dim_v, FA_PAD_ELEMS);
    int64_t kv_head = it->q_head / p->group, sub_ld = fa_query_block_ld(ld, FA_FORWARD_SUB_ROWS);
    int64_t blocks = (it->rows + FA_FORWARD_SUB_ROWS - 1) / FA_FORWARD_SUB_ROWS;

    FA_T *qt = fa_arena_alloc(arena, (size_t)(p->dim * ld) * sizeof(FA_T));
    FA_T *s = fa_arena_alloc(arena, (size_t)(bk * sub_ld) * sizeof(FA_T));
    FA_NAME(rows_state_) st;
    st.acc = fa_arena_alloc(arena, (size_t)(job->schedule.block_q * dv_pad) * sizeof(FA_T));
    st.row_max = fa_arena_alloc(arena, (size_t)ld * sizeof(FA_T));
    st.row_sum = fa_arena_alloc(arena, (size_t)ld * sizeof(FA_T));
    st.acc_stride = dv_pad;

    /* Queries: packed from the caller's rows, or from their widened copy when q is half precision.
     * Keys and values: read where the caller keeps them, or from tiles of the arena, filled for each
     * key tile, when they are paged or half precision. */
    const int q_half = fa_dtype_is_half(p->q_type), kv_tiles = p->pages || fa_dtype_is_half(p->kv_type);
    const size_t kv_elem = fa_elem_size(p->kv_type);
    const char *q = (const char *)fa_view_at(&p->q, fa_elem_size(p->q_type), it->batch, it->q_head, it->row0);
    const char *k = NULL, *v = NULL;
    FA_T *k_tile = NULL, *v_tile = NULL;
    if (kv_tiles) {
        k_tile = fa_arena_alloc(arena, (size_t)(bk * p->dim) * sizeof(FA_T));
        v_tile = fa_arena_alloc(arena, (size_t)(bk * p->dim_v) * sizeof(FA_T));
    }
    if (!p->pages) {
        k = (const char *)fa_view_at(&p->k, kv_elem, it->batch, kv_head, 0);
        v = (const char *)fa_view_at(&p->v, kv_elem, it->batch, kv_head, 0);
    }
    FA_NAME(key_tile_) t;
    t.cache_k = k;
    t.cache_v = v;
    t.kv_head = kv_head;
    t.k_stride = kv_tiles ? p->dim : p->k.stride_seq;
    t.v_stride = kv_tiles ? p->dim_v : p->v.stride_seq;

    /* the scale folded into the queries: score tiles come out scaled; each query block packed on its own */
    const FA_T *q_rows = (const FA_T *)(const void *)q;
    int64_t q_stride = p->q.stride_seq;
    if (q_half) {
        FA_T *widened = fa_arena_alloc(arena, (size_t)(job->schedule.block_q * p->dim) * sizeof(FA_T));
        kern->widen(it->rows, p->dim, (const uint16_t *)(const void *)q, p->q.stride_seq, p->q_type, widened,
                    p->dim);
        q_rows = widened;
        q_stride = p->dim;
    }
    for (int64_t g = 0; g < blocks; g++) {
        FA_NAME(sub_block_) sb = FA_NAME(sub_block_at_)(job, it, g, qt, &st);
        kern->pack_transposed(sb.rows, p->dim, q_rows + (sb.row0 - it->row0) * q_stride, q_stride,
                              (FA_T)p->scale, sb.qt, sb.ld);
    }
    for (int64_t r = 0; r < ld; r++) {
        st.row_max[r] = -(FA_T)INFINITY;
        st.row_sum[r] = 0;
    }
    for (int64_t x = 0; x < it->rows * dv_pad; x++) st.acc[x] = 0;

    /* The key blocks the item meets (masked for all its rows elsewhere), within [key_lo, key_hi) */
    fa_key_blocks met = fa_key_blocks_seen(p, it->row0, it->rows, bk);
    int64_t first = met.first > key_lo / bk ? met.first : key_lo / bk;
    int64_t end = met.end < (key_hi + bk - 1) / bk ? met.end : (key_hi + bk - 1) / bk;
    /* A decode step over a half cache reads it in place (scores_direct_ above). Its item is one
     * query block, so the tile's fill (skipped when in place) and the block's attend_tile_ decide
     * on the same rows and columns. */
    _Static_assert(FA_HALF_ROWS <= FA_FORWARD_SUB_ROWS, "a decode item is one query block");
    const int direct = FA_HALF_DIRECT && fa_dtype_is_half(p->kv_type) && it->rows <= FA_HALF_ROWS;
    for (int64_t b = first; b < end; b++) {
        int64_t block0 = b * bk, tile_cols = p->kv_len - block0 < bk ? p->kv_len - block0 : bk;
        /* only the columns some row of the item sees */
        fa_key_range seen = fa_tile_cols_seen(p, it->row0, it->rows, block0, tile_cols);
        int64_t col0 = block0 + seen.begin, cols = seen.end - seen.begin;
        if (cols == 0) continue;
        t.col0 = col0;
        t.in_place = direct && fa_tile_fully_visible(p, it->row0, it->rows, col0, cols);
        t.k = k_tile;
        t.v = v_tile;
        if (t.in_place) {
            /* read where they lie, in attend_tile_ */
        } else if (p->pages) {
            FA_NAME(gather_pages_)(kern, p, 0, kv_head, col0, cols, k_tile, v_tile);
        } else if (kv_tiles) {
            FA_NAME(tile_rows_)
            (kern, p, 0, cols, p->dim, k + col0 * p->k.stride_seq * (int64_t)kv_elem, p->k.stride_seq,
             k_tile);
            FA_NAME(tile_rows_)
            (kern, p, 0, cols, p->dim_v, v + col0 * p->v.stride_seq * (int64_t)kv_elem, p->v.stride_seq,
             v_tile);
        } else {
            t.k = (const FA_T *)(const void *)k + col0 * t.k_stride;
            t.v = (const FA_T *)(const void *)v + col0 * t.v_stride;
        }
        for (int64_t g = 0; g < blocks; g++) {
            FA_NAME(sub_block_) sb = FA_NAME(sub_block_at_)(job, it, g, qt, &st);
            if (b < sb.first || b >= sb.end) continue;
            fa_key_range mine = fa_tile_cols_seen(p, sb.row0, sb.rows, block0, tile_cols);
            if (mine.end == mine.begin) continue;
            FA_NAME(attend_tile_)(job, it, &sb, &t, block0 + mine.begin, mine.end - mine.begin, s);
        }
    }
    return st;
}

#if FA_PAIRS_PATH
#include "drivers/forward_pairs.h"
#endif

/* The item's online softmax on the path its job takes: the bf16 dot-product units, or the FA_T kernels. */
static FA_NAME(rows_state_) FA_NAME(attend_item_)(const fa_forward_job *job, fa_arena *arena,
                                                  const fa_q_item *it, int64_t key_lo, int64_t key_hi)
{
#if FA_PAIRS_PATH
    if (job->pairs) return attend_pairs_(job, arena, it, key_lo, key_hi);
#endif
    return FA_NAME(attend_)(job, arena, it, key_lo, key_hi);
}

/* out = acc / l and lse = m + log(l) for the item's rows, where l = sum_j exp(s_j - m). With a
 * sink logit σ the denominator gains exp(σ - m): for the larger reference M = max(m, σ),
 * out = acc·exp(m - M) / (l·exp(m - M) + exp(σ - M)) and lse = M + log(that denominator), so
 * neither exponential overflows whichever of m and σ is larger. */
static void FA_NAME(write_rows_)(const fa_problem *p, const fa_q_item *it, const FA_NAME(rows_state_) * st)
{
    const size_t q_elem = fa_elem_size(p->q_type);
    const int out_half = fa_dtype_is_half(p->q_type);
    char *out = (char *)fa_view_at(&p->out, q_elem, it->batch, it->q_head, it->row0);
    FA_T *lse = p->lse ? (FA_T *)p->lse + (it->batch * p->q_heads + it->q_head) * p->lse_head_stride +
                             it->row0 * p->lse_row_stride
                       : NULL;
    const int has_sink = p->sinks != NULL;
    const FA_T sink = has_sink ? (FA_T)p->sinks[it->q_head] : 0;
    for (int64_t r = 0; r < it->rows; r++) {
        char *row = out + r * p->out.stride_seq * (int64_t)q_elem;
        FA_T *o =
            out_half ? st->acc + r * st->acc_stride : (FA_T *)(void *)row; /* half: in place, then rounded */
        const FA_T *a = st->acc + r * st->acc_stride;
        FA_T l = st->row_sum[r], m = st->row_max[r];
        /* l == 0 exactly when the row saw no key: exact zeros and -inf (the sink's logit with a
         * sink), never 0/0. A NaN l is not 0, so a row that saw a NaN stays NaN. */
        if (l == 0) {
            for (int64_t y = 0; y < p->dim_v; y++) o[y] = 0;
            if (lse) lse[r * p->lse_row_stride] = has_sink ? sink : -(FA_T)INFINITY;
        } else if (!has_sink) {
            for (int64_t y = 0; y < p->dim_v; y++) o[y] = a[y] / l;
            if (lse) lse[r * p->lse_row_stride] = m + FA_LOG(l);
        } else {
            FA_T big = m > sink ? m : sink, keys = l * FA_EXP(m - big), denom = keys + FA_EXP(sink - big);
            FA_T w = FA_EXP(m - big) / denom;
            for (int64_t y = 0; y < p->dim_v; y++) o[y] = a[y] * w;
            if (lse) lse[r * p->lse_row_stride] = big + FA_LOG(denom);
        }
        /* the row in the accumulation type, rounded once to the output's */
        if (out_half)
            for (int64_t y = 0; y < p->dim_v; y++) fa_half_store(p->q_type, row, y, (float)o[y]);
    }
}

static void FA_NAME(forward_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_forward_job *job = job_ptr;
    fa_q_item it = fa_q_schedule_item(&job->schedule, job->problem, index);
    FA_NAME(rows_state_) st = FA_NAME(attend_item_)(job, arena, &it, 0, job->problem->kv_len);
    FA_NAME(write_rows_)(job->problem, &it, &st);
}

/* ---- split-KV: (query item, chunk) items write partial results, merge items combine them ----
 * The partial result of (item i, chunk c) is at partials + (i·splits + c)·partial_elems: the rows'
 * lse [ld], then their normalized outputs [block_q][dv_pad], the form fa_merge takes, so that both
 * merge with merge_row_ (merge_row.h). */

#include "drivers/merge_row.h"

static FA_T *FA_NAME(partial_at_)(const fa_forward_job *job, int64_t item, int64_t chunk)
{
    return (FA_T *)job->partials + (item * job->split.splits + chunk) * job->partial_elems;
}

static void FA_NAME(forward_chunk_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_forward_job *job = job_ptr;
    int64_t item = index / job->split.splits, chunk = index % job->split.splits;
    fa_q_item it = fa_q_schedule_item(&job->schedule, job->problem, item);
    int64_t key_lo = chunk * job->split.chunk, key_hi = key_lo + job->split.chunk;
    FA_NAME(rows_state_) st = FA_NAME(attend_item_)(job, arena, &it, key_lo, key_hi);
    FA_T *lse = FA_NAME(partial_at_)(job, item, chunk), *out = lse + job->ld;
    for (int64_t r = 0; r < it.rows; r++) {
        FA_T l = st.row_sum[r];
        if (l == 0) { /* the row saw no key of this chunk: its row is never read */
            lse[r] = -(FA_T)INFINITY;
            continue;
        }
        lse[r] = st.row_max[r] + FA_LOG(l);
        const FA_T *a = st.acc + r * st.acc_stride;
        FA_T *o = out + r * st.acc_stride;
        for (int64_t y = 0; y < job->problem->dim_v; y++) o[y] = a[y] / l;
    }
}

/* Merges the chunks of one query item in chunk order into a state write_rows_ finishes as it
 * finishes an unsplit item: row max = the merged lse, row sum = 1 (0 for a row no chunk saw),
 * acc = the merged output, so the sink, when there is one, enters once, after the merge. */
static void FA_NAME(forward_merge_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_forward_job *job = job_ptr;
    const fa_problem *p = job->problem;
    fa_q_item it = fa_q_schedule_item(&job->schedule, p, index);
    int64_t ld = job->ld, dv_pad = fa_round_up(p->dim_v, FA_PAD_ELEMS), splits = job->split.splits;
    FA_NAME(rows_state_) st;
    st.acc = fa_arena_alloc(arena, (size_t)(job->schedule.block_q * dv_pad) * sizeof(FA_T));
    st.row_max = fa_arena_alloc(arena, (size_t)ld * sizeof(FA_T));
    st.row_sum = fa_arena_alloc(arena, (size_t)ld * sizeof(FA_T));
    st.acc_stride = dv_pad;
    FA_T *lses = fa_arena_alloc(arena, (size_t)splits * sizeof(FA_T));
    const FA_T **rows = fa_arena_alloc(arena, (size_t)splits * sizeof(FA_T *));
    for (int64_t r = 0; r < it.rows; r++) {
        for (int64_t c = 0; c < splits; c++) {
            const FA_T *part = FA_NAME(partial_at_)(job, index, c);
            lses[c] = part[r];
            rows[c] = part + ld + r * dv_pad;
        }
        int seen = FA_NAME(merge_row_)(splits, lses, rows, p->dim_v, st.acc + r * dv_pad, &st.row_max[r]);
        st.row_sum[r] = seen ? 1 : 0;
    }
    FA_NAME(write_rows_)(p, &it, &st);
}

/* ---- a batch of sequences: the items of each sequence's own dense problem ----
 * Phase 0 item g (numbered over all sequences, from the wave's first) is item g - first_item[b] of
 * sequence b: a whole query item, or a (query item, chunk) item when the sequence splits; phase 1
 * items merge the split sequences' chunks. Each runs exactly as a dense call of its sequence alone
 * would run it (same tiles, same split, same merge order). */

static fa_forward_job FA_NAME(sequence_job_)(const fa_forward_job *job, const fa_problem *one, int64_t b)
{
    fa_forward_job mine = *job;
    mine.problem = one;
    mine.schedule = fa_q_schedule_make(one, job->schedule.block_q);
    mine.split = job->plans[b].split;
    mine.partials = (FA_T *)job->partials + job->plans[b].partials;
    mine.pairs = job->pairs && one->q_len > FA_HALF_ROWS; /* takes_pairs of the sequence alone */
    return mine;
}

static void FA_NAME(forward_sequence_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_forward_job *job = job_ptr;
    int64_t g = job->wave_item0 + index;
    int64_t b = fa_sequence_of_item(job->first_item, job->problem->batch, g);
    fa_problem one;
    forward_problem_of_sequence(job->problem, b, &one);
    fa_forward_job mine = FA_NAME(sequence_job_)(job, &one, b);
    if (mine.split.splits > 1)
        FA_NAME(forward_chunk_item_)(&mine, arena, g - job->first_item[b]);
    else
        FA_NAME(forward_item_)(&mine, arena, g - job->first_item[b]);
}

static void FA_NAME(forward_sequence_merge_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_forward_job *job = job_ptr;
    int64_t g = job->wave_merge0 + index;
    int64_t b = fa_sequence_of_item(job->first_merge, job->problem->batch, g);
    fa_problem one;
    forward_problem_of_sequence(job->problem, b, &one);
    fa_forward_job mine = FA_NAME(sequence_job_)(job, &one, b);
    FA_NAME(forward_merge_item_)(&mine, arena, g - job->first_merge[b]);
}

