/* SPDX-License-Identifier: BSD-3-Clause */
/* The forward of an all-bf16 call on a table with a bf16 set (kernels.h, "bf16 on dot-product
 * units"): attend_pairs_ is attend_ with the two products on the set's dot and the caller's bf16
 * rows read as they are. Included by forward_item.h in its float instantiation (FA_T = float), after
 * rows_state_ and the page runs, so that the items, the split-KV chunks and their merge finish it
 * exactly as they finish attend_.
 *
 * Per key tile: S = K·Qᵀ on the dot (A = the key rows where they lie, B = the query block packed in
 * pairs once per item), the value modifiers and masks on S as in attend_, the online softmax with
 * the accumulator transposed (acc_t[y·ld + r]) writing P rounded to bf16 in pairs of keys, Vᵀ
 * packed from the value rows, and acc_t += Vᵀ·P on the dot. At the end acc_t is transposed into the rows_state
 * that write_rows_ reads. The tiles' layouts and padding are the set's (pad_k). */

/* acc_t += P·V over the keys each row sees only, one element at a time: an edge tile whose values
 * hold an Inf or NaN, which a whole-tile product would hand (as 0·Inf) to rows that do not see it
 * (visible_products.h). P is the pairs the dot would read, so the rows that see every key of the
 * tile sum the same rounded weights, in another order. */
static void pairs_accumulate_visible_(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                                      const uint16_t *pp, int64_t ld, const uint16_t *v, int64_t v_stride,
                                      float *acc_t)
{
    for (int64_t r = 0; r < rows; r++) {
        fa_key_range keys = fa_visible_keys(p, row0 + r);
        int64_t lo = keys.begin - col0 < 0 ? 0 : keys.begin - col0, hi = keys.end - col0 > cols ? cols : keys.end - col0;
        for (int64_t c = lo; c < hi; c++) {
            float w = fa_bf16_to_f32(pp[(c / 2) * 2 * ld + 2 * r + c % 2]);
            for (int64_t y = 0; y < p->dim_v; y++) acc_t[y * ld + r] += w * fa_bf16_to_f32(v[c * v_stride + y]);
        }
    }
}

static FA_NAME(rows_state_) attend_pairs_(const fa_forward_job *job, fa_arena *arena, const fa_q_item *it,
                                          int64_t key_lo, int64_t key_hi)
{
    const fa_problem *p = job->problem;
    const fa_kernels_f32 *kern = job->kernels->f32;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    const fa_pairs_tiles tiles = fa_pairs_tiles_of(kb->pad_k, job->schedule.block_q, job->block_k, p->dim, p->dim_v);
    int64_t bk = job->block_k, ld = job->ld, dv = p->dim_v, kv_head = it->q_head / p->group;

    uint16_t *qp = fa_arena_alloc(arena, tiles.queries);
    float *s = fa_arena_alloc(arena, (size_t)(bk * ld) * sizeof(float));
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
    kb->pack_pairs(it->rows, p->dim, q, p->q.stride_seq, qp, ld);
    for (int64_t r = 0; r < ld; r++) {
        st.row_max[r] = -INFINITY;
        st.row_sum[r] = 0;
    }
    for (int64_t x = 0; x < dv * ld; x++) acc_t[x] = 0;

    fa_key_blocks met = fa_key_blocks_seen(p, it->row0, it->rows, bk);
    int64_t first = met.first > key_lo / bk ? met.first : key_lo / bk;
    int64_t end = met.end < (key_hi + bk - 1) / bk ? met.end : (key_hi + bk - 1) / bk;
    const int modified = fa_problem_modifies_scores(p);
    /* the scale: in the softmax's FMA when it is positive (the max of the raw scores is then the
     * max of the scores), else first, as the modifiers need the scores themselves anyway */
    const int scale_first = modified || !(p->scale > 0);
    for (int64_t block0 = first * bk; block0 < end * bk; block0 += bk) {
        fa_key_range seen = fa_tile_cols_seen(p, it->row0, it->rows, block0,
                                              p->kv_len - block0 < bk ? p->kv_len - block0 : bk);
        int64_t col0 = block0 + seen.begin, cols = seen.end - seen.begin;
        if (cols == 0) continue;
        const uint16_t *kt = k_tile, *vr = v_tile;
        if (p->pages)
            FA_NAME(gather_pages_)(kern, p, 1, kv_head, col0, cols, k_tile, v_tile); /* bf16 rows kept */
        else
            kt = k + col0 * k_stride, vr = v + col0 * v_stride;
        kb->dot(cols, ld, p->dim, kt, k_stride, qp, ld, s, ld, scale_first ? (float)p->scale : 1.0f, 0);
        if (modified) {
            fa_score_mods mods = fa_score_mods_of(p, sizeof(float), it->batch, it->q_head, it->row0, it->rows, col0);
            kern->modify(&mods, ld, cols, s, NULL);
        }
        const int full = fa_tile_fully_visible(p, it->row0, it->rows, col0, cols);
        if (!full) fa_epilogue_f32(p, it->row0, it->rows, col0, cols, s, ld);
        kb->online_softmax_pairs(it->rows, ld, cols, scale_first ? 1.0f : (float)p->scale, s, st.row_max,
                                 st.row_sum, acc_t, dv, pp);
        int64_t cols_k = fa_round_up(cols, kb->pad_k);
        int finite = kb->pack_rows_t(cols, dv, vr, v_stride, vt, cols_k);
        if (!full && !finite)
            pairs_accumulate_visible_(p, it->row0, it->rows, col0, cols, pp, ld, vr, v_stride, acc_t);
        else
            kb->dot(dv, ld, cols_k, vt, cols_k, pp, ld, acc_t, ld, 1.0f, 1);
    }
    kb->release();
    for (int64_t r = 0; r < it->rows; r++)
        for (int64_t y = 0; y < dv; y++) st.acc[r * st.acc_stride + y] = acc_t[y * ld + r];
    return st;
}
