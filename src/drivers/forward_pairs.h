/* SPDX-License-Identifier: BSD-3-Clause */
/* The forward of an all-bf16 call on a table with a bf16 set (kernels.h, "bf16 on dot-product
 * units"): attend_pairs_ is attend_ with the two products on the set's dot and the caller's bf16
 * rows read as they are. Included by forward_item.h in its float instantiation (FA_T = float), after
 * rows_state_ and the page runs, so that the items, the split-KV chunks and their merge finish it
 * exactly as they finish attend_.
 *
 * Per key tile: Vᵀ packed from the value rows once, then for each query block of the item (at most
 * FA_PAIRS_SUB_ROWS rows): S = K·Qᵀ on the dot (A = the key rows where they lie, B = the block's
 * queries packed in pairs once per item), the value modifiers and masks on S as in attend_, the
 * online softmax with the block's accumulator transposed (acc_t[y·ld + r]) writing P rounded to
 * bf16 in pairs of keys, and acc_t += Vᵀ·P on the dot. At the end each acc_t is transposed into the
 * rows_state that write_rows_ reads. The tiles' layouts and padding are the set's (pad_k). */

/* acc_t += P·V over the keys each row sees only, one element at a time: an edge tile whose values
 * hold an Inf or NaN, which a whole-tile product would hand (as 0·Inf) to rows that do not see it
 * (visible_products.h). P is the pairs the dot would read, so the rows that see every key of the
 * tile sum the same rounded weights, in another order. */
static void pairs_accumulate_visible_(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0,
                                      int64_t cols, const uint16_t *pp, int64_t ld, const uint16_t *v,
                                      int64_t v_stride, float *acc_t)
{
    for (int64_t r = 0; r < rows; r++) {
        fa_key_range keys = fa_visible_keys(p, row0 + r);
        int64_t lo = keys.begin - col0 < 0 ? 0 : keys.begin - col0,
                hi = keys.end - col0 > cols ? cols : keys.end - col0;
        for (int64_t c = lo; c < hi; c++) {
            float w = fa_bf16_to_f32(pp[(c / 2) * 2 * ld + 2 * r + c % 2]);
            for (int64_t y = 0; y < p->dim_v; y++)
                acc_t[y * ld + r] += w * fa_bf16_to_f32(v[c * v_stride + y]);
        }
    }
}

/* One query block of a pairs item: at most FA_PAIRS_SUB_ROWS rows (row0 of the problem), their
 * queries in pairs (ld apart), their transposed accumulator and their part of the row statistics. */
typedef struct {
    int64_t row0, rows, ld, first, end; /* [first, end): the key blocks it meets */
    uint16_t *qp;
    float *acc_t, *row_max, *row_sum;
} pairs_block_;

/* (The item's loop over key blocks already keeps to a split chunk's keys.) */
static pairs_block_ pairs_block_at_(const fa_forward_job *job, const fa_q_item *it, int64_t g, uint16_t *qp,
                                    float *acc_t, const FA_NAME(rows_state_) * st)
{
    const fa_problem *p = job->problem;
    const int64_t bk = job->block_k, r0 = g * FA_PAIRS_SUB_ROWS,
                  d_k = fa_round_up(p->dim, job->kernels->bf16->pad_k);
    pairs_block_ pb;
    pb.row0 = it->row0 + r0;
    pb.rows = fa_query_block_rows(it->rows, g, FA_PAIRS_SUB_ROWS);
    pb.ld = fa_round_up(pb.rows, FA_PAD_ELEMS);
    pb.qp = qp + r0 * d_k; /* every block before it is FA_PAIRS_SUB_ROWS wide */
    pb.acc_t = acc_t + r0 * p->dim_v;
    pb.row_max = st->row_max + r0;
    pb.row_sum = st->row_sum + r0;
    fa_key_blocks met = fa_key_blocks_seen(p, pb.row0, pb.rows, bk);
    pb.first = met.first;
    pb.end = met.end;
    return pb;
}

/* The values of one key tile as the P·V dot reads them: the rows vr of the item's columns
 * [col0, col0 + cols), and Vᵀ packed from them once for every block, its rows vt_stride apart:
 * the columns rounded up to pad_k and pad_k more, zero past cols, so that a block's columns read
 * from any offset within the tile stay inside its row. finite: no Inf or NaN among them. */
typedef struct {
    const uint16_t *vr;
    int64_t col0, cols, v_stride, vt_stride;
    const uint16_t *vt;
    int finite;
} pairs_values_;

/* One query block's step over the columns [col0, col0 + cols) of a key tile whose key rows are kt
 * (from col0 on, k_stride apart). */
static void pairs_tile_(const fa_forward_job *job, const fa_q_item *it, const pairs_block_ *pb,
                        const uint16_t *kt, int64_t k_stride, const pairs_values_ *vals, int64_t col0,
                        int64_t cols, float *s, uint16_t *pp, int scale_first)
{
    const fa_problem *p = job->problem;
    const fa_kernels_f32 *kern = job->kernels->f32;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    const int64_t dv = p->dim_v, ld = pb->ld, cols_k = fa_round_up(cols, kb->pad_k);
    kb->dot(cols, ld, p->dim, kt, k_stride, pb->qp, ld, s, ld, scale_first ? (float)p->scale : 1.0f, 0);
    if (fa_problem_modifies_scores(p)) {
        fa_score_mods mods =
            fa_score_mods_of(p, sizeof(float), it->batch, it->q_head, pb->row0, pb->rows, col0);
        kern->modify(&mods, ld, cols, s, NULL);
    }
    const int full = fa_tile_fully_visible(p, pb->row0, pb->rows, col0, cols);
    if (!full) fa_epilogue_f32(p, pb->row0, pb->rows, col0, cols, s, ld);
    kb->online_softmax_pairs(pb->rows, ld, cols, scale_first ? 1.0f : (float)p->scale, s, pb->row_max,
                             pb->row_sum, pb->acc_t, dv, pp);
    /* The block's columns of the tile's Vᵀ, cols_k of them: past cols they hold other blocks' values
     * (or zeros), which meet P's zero padding. With values that are not all finite that gives NaN
     * (0·Inf), so then the product takes only what each row sees, unless the block's columns are
     * the tile's (zeros past them) and it sees them all. */
    const int64_t off = col0 - vals->col0;
    if (!vals->finite && (!full || off != 0 || cols != vals->cols)) {
        pairs_accumulate_visible_(p, pb->row0, pb->rows, col0, cols, pp, ld, vals->vr + off * vals->v_stride,
                                  vals->v_stride, pb->acc_t);
        return;
    }
    kb->dot(dv, ld, cols_k, vals->vt + off, vals->vt_stride, pp, ld, pb->acc_t, ld, 1.0f, 1);
}

static FA_NAME(rows_state_) attend_pairs_(const fa_forward_job *job, fa_arena *arena, const fa_q_item *it,
                                          int64_t key_lo, int64_t key_hi)
{
    const fa_problem *p = job->problem;
    const fa_kernels_f32 *kern = job->kernels->f32;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    const fa_pairs_tiles tiles =
        fa_pairs_tiles_of(kb->pad_k, job->schedule.block_q, job->block_k, p->dim, p->dim_v);
    int64_t bk = job->block_k, ld = job->ld, dv = p->dim_v, kv_head = it->q_head / p->group;
    int64_t sub_ld = fa_query_block_ld(ld, FA_PAIRS_SUB_ROWS);
    int64_t blocks = (it->rows + FA_PAIRS_SUB_ROWS - 1) / FA_PAIRS_SUB_ROWS;

    uint16_t *qp = fa_arena_alloc(arena, tiles.queries);
    float *s = fa_arena_alloc(arena, (size_t)(bk * sub_ld) * sizeof(float));
    uint16_t *pp = fa_arena_alloc(arena, tiles.probabilities);
    uint16_t *vt = fa_arena_alloc(arena, tiles.values_t);
    float *acc_t = fa_arena_alloc(arena, tiles.accumulator_t);
    FA_NAME(rows_state_) st;
    st.acc_stride = fa_round_up(dv, FA_PAD_ELEMS);
    st.acc = fa_arena_alloc(arena, (size_t)(job->schedule.block_q * st.acc_stride) * sizeof(float));
    st.row_max = fa_arena_alloc(arena, (size_t)ld * sizeof(float));
    st.row_sum = fa_arena_alloc(arena, (size_t)ld * sizeof(float));
    uint16_t *k_tile = NULL, *v_tile = NULL;
    if (p->pages) {
        k_tile = fa_arena_alloc(arena, (size_t)(bk * p->dim) * 2);
        v_tile = fa_arena_alloc(arena, (size_t)(bk * dv) * 2);
    }

    const uint16_t *q = fa_view_at(&p->q, 2, it->batch, it->q_head, it->row0);
    const uint16_t *k = NULL, *v = NULL;
    if (!p->pages) {
        k = fa_view_at(&p->k, 2, it->batch, kv_head, 0);
        v = fa_view_at(&p->v, 2, it->batch, kv_head, 0);
    }
    const int64_t k_stride = p->pages ? p->dim : p->k.stride_seq, v_stride = p->pages ? dv : p->v.stride_seq;
    for (int64_t g = 0; g < blocks; g++) {
        pairs_block_ pb = pairs_block_at_(job, it, g, qp, acc_t, &st);
        kb->pack_pairs(pb.rows, p->dim, q + (pb.row0 - it->row0) * p->q.stride_seq, p->q.stride_seq, pb.qp,
                       pb.ld);
    }
    for (int64_t r = 0; r < ld; r++) {
        st.row_max[r] = -INFINITY;
        st.row_sum[r] = 0;
    }
    for (int64_t x = 0; x < dv * ld; x++) acc_t[x] = 0;

    fa_key_blocks met = fa_key_blocks_seen(p, it->row0, it->rows, bk);
    int64_t first = met.first > key_lo / bk ? met.first : key_lo / bk;
    int64_t end = met.end < (key_hi + bk - 1) / bk ? met.end : (key_hi + bk - 1) / bk;
    /* the scale: in the softmax's FMA when it is positive (the max of the raw scores is then the
     * max of the scores), else first, as the modifiers need the scores themselves anyway */
    const int scale_first = fa_problem_modifies_scores(p) || !(p->scale > 0);
    for (int64_t b = first; b < end; b++) {
        int64_t block0 = b * bk, tile_cols = p->kv_len - block0 < bk ? p->kv_len - block0 : bk;
        /* the columns some row of the item sees: K and V rows staged, Vᵀ packed once for every block */
        fa_key_range seen = fa_tile_cols_seen(p, it->row0, it->rows, block0, tile_cols);
        int64_t col0 = block0 + seen.begin, cols = seen.end - seen.begin;
        if (cols == 0) continue;
        const uint16_t *kt = k_tile, *vr = v_tile;
        if (p->pages)
            FA_NAME(gather_pages_)(kern, p, 1, kv_head, col0, cols, k_tile, v_tile); /* bf16 rows kept */
        else
            kt = k + col0 * k_stride, vr = v + col0 * v_stride;
        pairs_values_ vals = {vr, col0, cols, v_stride, fa_round_up(cols, kb->pad_k) + kb->pad_k, vt, 0};
        vals.finite = kb->pack_rows_t(cols, dv, vr, v_stride, vt, vals.vt_stride);
        for (int64_t g = 0; g < blocks; g++) {
            pairs_block_ pb = pairs_block_at_(job, it, g, qp, acc_t, &st);
            if (b < pb.first || b >= pb.end) continue;
            fa_key_range mine = fa_tile_cols_seen(p, pb.row0, pb.rows, block0, tile_cols);
            if (mine.end == mine.begin) continue;
            int64_t c0 = block0 + mine.begin;
            pairs_tile_(job, it, &pb, kt + (c0 - col0) * k_stride, k_stride, &vals, c0, mine.end - mine.begin,
                        s, pp, scale_first);
        }
    }
    kb->release();
    /* each block's acc_t (dv rows of ld) transposed into its rows of st.acc by the float set's pack
     * (a copy: 1·x is x), 16 × 16 in registers where an element loop walked acc_t a row apart */
    for (int64_t g = 0; g < blocks; g++) {
        pairs_block_ pb = pairs_block_at_(job, it, g, qp, acc_t, &st);
        kern->pack_transposed(dv, pb.rows, pb.acc_t, pb.ld, 1.0f,
                              st.acc + (pb.row0 - it->row0) * st.acc_stride, st.acc_stride);
    }
    return st;
}
