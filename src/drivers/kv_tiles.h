/* SPDX-License-Identifier: BSD-3-Clause */
/* Where a forward item's keys and values come from, written once for both accumulation types:
 * included by forward_item.h with FA_T and FA_SFX (f32/f64: also the kernel-table member) defined.
 * The caller's rows are read where they lie; a paged pool is read a page run at a time; a stored
 * type other than FA_T (bf16, f16; int8 and FP8 with their scales) is widened by the table's `widen`
 * as the rows are staged. */

/* Rows of k or v as the caller stores them: the first row, their stride in elements of the stored
 * type, and their scales (a quantized cache's; NULL otherwise), scale_stride floats apart. */
typedef struct {
    const char *at;
    int64_t stride;
    const float *scale;
    int64_t scale_stride;
} FA_NAME(stored_rows_);

/* Row s of (batch b, head h) of `rows` (k or v) with its scales `scales` (k_scale or v_scale). */
static FA_NAME(stored_rows_) FA_NAME(stored_rows_at_)(const fa_problem *p, const fa_view *rows,
                                                      const fa_view *scales, int64_t b, int64_t h, int64_t s)
{
    FA_NAME(stored_rows_) r;
    r.at = (const char *)fa_view_at(rows, fa_elem_size(p->kv_type), b, h, s);
    r.stride = rows->stride_seq;
    r.scale = (const float *)fa_view_at(scales, sizeof(float), b, h, s);
    r.scale_stride = scales->stride_seq;
    return r;
}

/* The same rows n further on. */
static FA_NAME(stored_rows_)
    FA_NAME(stored_rows_skip_)(const fa_problem *p, FA_NAME(stored_rows_) r, int64_t n)
{
    r.at += n * r.stride * (int64_t)fa_elem_size(p->kv_type);
    if (r.scale) r.scale += n * r.scale_stride;
    return r;
}

/* The run of keys from t on that lie in one page of a paged pool (at most `left` keys): the rows of
 * kv_head there in k and v. */
typedef struct {
    FA_NAME(stored_rows_) k, v;
    int64_t rows;
} FA_NAME(page_run_);

static FA_NAME(page_run_) FA_NAME(page_run_at_)(const fa_problem *p, int64_t kv_head, int64_t t, int64_t left)
{
    FA_NAME(page_run_) run;
    int64_t row0 = t % p->page_size, page = p->pages[t / p->page_size];
    run.rows = p->page_size - row0 < left ? p->page_size - row0 : left;
    run.k = FA_NAME(stored_rows_at_)(p, &p->k, &p->k_scale, page, kv_head, row0);
    run.v = FA_NAME(stored_rows_at_)(p, &p->v, &p->v_scale, page, kv_head, row0);
    return run;
}

/* Asks for a run's rows ahead of their copy, into L2 (so more misses can be in flight than L1
 * holds). */
static void FA_NAME(prefetch_run_)(const fa_problem *p, const FA_NAME(page_run_) * run)
{
    const int64_t elem = (int64_t)fa_elem_size(p->kv_type);
    for (int64_t r = 0; r < run->rows; r++) {
        for (int64_t x = 0; x < p->dim * elem; x += 64)
            __builtin_prefetch(run->k.at + r * run->k.stride * elem + x, 0, 2);
        for (int64_t y = 0; y < p->dim_v * elem; y += 64)
            __builtin_prefetch(run->v.at + r * run->v.stride * elem + y, 0, 2);
    }
}

/* `rows` stored rows (`dim` wide) into a tile of rows `dim` apart: FA_T rows, copied or, when the
 * cache is stored in another type, widened (and scaled); or, with `keep`, rows of the cache's own
 * type copied as they are (the bf16 dot-product units, forward_dot.h). */
static void FA_NAME(tile_rows_)(const FA_CAT(fa_kernels_, FA_SFX) * kern, const fa_problem *p, int keep,
                                int64_t rows, int64_t dim, const FA_NAME(stored_rows_) * src, void *dst)
{
    if (!keep && fa_kv_widens(p)) {
        kern->widen(rows, dim, src->at, src->stride, p->kv_type, src->scale, src->scale_stride, dst, dim);
        return;
    }
    const size_t elem = fa_elem_size(p->kv_type);
    for (int64_t r = 0; r < rows; r++)
        memcpy((char *)dst + r * dim * (int64_t)elem, src->at + r * src->stride * (int64_t)elem,
               (size_t)dim * elem);
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
        FA_NAME(page_run_) next = run;
        if (after < cols) {
            next = FA_NAME(page_run_at_)(p, kv_head, col0 + after, cols - after);
            FA_NAME(prefetch_run_)(p, &next);
        }
        FA_NAME(tile_rows_)(kern, p, keep, run.rows, p->dim, &run.k, (char *)k_tile + c * p->dim * elem);
        FA_NAME(tile_rows_)(kern, p, keep, run.rows, p->dim_v, &run.v, (char *)v_tile + c * p->dim_v * elem);
        c = after;
        run = next;
    }
}
