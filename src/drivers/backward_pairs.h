/* SPDX-License-Identifier: BSD-3-Clause */
/* The backward of an all-bf16 call on a table with a bf16 set (kernels.h, "bf16 on dot-product
 * units"): the split plan's items (backward_items.h) with the five products of a tile on the set's
 * dot. Included by backward_items.h in its float instantiation (FA_T = float), which dispatches to
 * pairs_grad_item_ when the job takes this path.
 *
 * Per tile of query rows r and keys c, with every product C[m][n] += A[m][k]·B[k][n] of the dot:
 *   S  = K·Qᵀ      A = K rows where they lie, B = Q in pairs along D      -> s[c][r], scaled
 *   dP = V·dOᵀ     A = V rows where they lie, B = dO in pairs along Dv    -> dp[c][r]
 *   P, dS as the float path computes them (probabilities, score_grad, masks, the softcap's derivative)
 *   dV += P·dO     A = P as bf16 rows [c][r], B = dO in pairs of rows     -> dv[c][y]
 *   dK += dS·Q     A = dS as bf16 rows [c][r], B = Q in pairs of rows     -> dk[c][x]
 *   dQᵀ += Kᵀ·dS   A = Kᵀ packed per tile, B = dS in pairs of keys        -> dq_t[x][r]
 * so no product needs a transpose of a score tile, and dQ accumulates transposed in the dQ item's
 * arena (the half-precision dq is summed in float and rounded once there, as the split plan does).
 * P and dS are rounded to bf16 for the products that read them (flashattn.h, fa_backward). On a
 * mask's edge, a masked P or dS is an exact zero, but 0·Inf is NaN: where the other operand of one
 * of the last three products holds an Inf or NaN (the packs report it), that product is summed over
 * the visible pairs only, one element at a time (visible_products.h says why). */

/* What every item of the path holds in its arena (the same regions for both kinds of item, so both
 * reach one high-water mark: fa_backward_pairs_scratch_bytes). */
typedef struct {
    uint16_t *qp, *dop;     /* Q, dO in pairs along D, Dv (the B of S and dP) */
    uint16_t *q_rp, *do_rp; /* Q, dO in pairs of rows (the B of dK and dV) */
    float *lse, *delta;     /* ld rows: -inf and 0 past the block's rows */
    int q_finite, do_finite;
    float *p, *ds, *dcap; /* key-major float tiles, bk × ld (dcap: with a softcap) */
    uint16_t *ab;         /* P or dS as bf16 rows, or dS in pairs of keys */
    uint16_t *kt;         /* Kᵀ (dQ items) */
    float *acc;           /* dK [bk][up(D)] then dV [bk][up(Dv)], or dQᵀ [D][ld] */
} pairs_scratch_;

static pairs_scratch_ pairs_scratch_alloc_(const fa_backward_job *job, fa_arena *arena)
{
    const fa_problem *p = job->problem;
    fa_backward_pairs_tiles t = fa_backward_pairs_tiles_of(job->kernels->bf16->pad_k, job->q_schedule.block_q,
                                                           job->block_k, p->dim, p->dim_v, p->softcap > 0);
    pairs_scratch_ sc;
    sc.qp = fa_arena_alloc(arena, t.qp), sc.dop = fa_arena_alloc(arena, t.dop);
    sc.q_rp = fa_arena_alloc(arena, t.q_rp), sc.do_rp = fa_arena_alloc(arena, t.do_rp);
    sc.lse = fa_arena_alloc(arena, t.row), sc.delta = fa_arena_alloc(arena, t.row);
    sc.p = fa_arena_alloc(arena, t.tile), sc.ds = fa_arena_alloc(arena, t.tile);
    sc.dcap = t.dcap ? fa_arena_alloc(arena, t.dcap) : NULL;
    sc.ab = fa_arena_alloc(arena, t.ab), sc.kt = fa_arena_alloc(arena, t.kt);
    sc.acc = fa_arena_alloc(arena, t.acc);
    sc.q_finite = sc.do_finite = 1;
    return sc;
}

/* Query rows [row0, row0 + rows) of (batch, q_head): packed for S and dP, and (with_rows, for a
 * dK/dV item) in pairs of rows for dK and dV; lse and delta padded to ld rows. */
static void pairs_query_fill_(const fa_backward_job *job, pairs_scratch_ *sc, int64_t batch, int64_t q_head,
                              int64_t row0, int64_t rows, int with_rows)
{
    const fa_problem *p = job->problem;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    int64_t ld = job->ld, at = (batch * p->q_heads + q_head) * p->lse_head_stride + row0;
    const uint16_t *q = fa_view_at(&p->q, 2, batch, q_head, row0), *d_o = fa_view_at(&p->dout, 2, batch, q_head, row0);
    kb->pack_pairs(rows, p->dim, q, p->q.stride_seq, sc->qp, ld);
    kb->pack_pairs(rows, p->dim_v, d_o, p->dout.stride_seq, sc->dop, ld);
    if (with_rows) {
        sc->q_finite = kb->pack_rows_pairs(rows, ld, p->dim, q, p->q.stride_seq, sc->q_rp,
                                           fa_round_up(p->dim, FA_PAD_ELEMS));
        sc->do_finite = kb->pack_rows_pairs(rows, ld, p->dim_v, d_o, p->dout.stride_seq, sc->do_rp,
                                            fa_round_up(p->dim_v, FA_PAD_ELEMS));
    }
    const float *lse = (const float *)p->lse + at, *delta = (const float *)job->delta + at;
    for (int64_t r = 0; r < ld; r++) {
        sc->lse[r] = r < rows ? lse[r] : -INFINITY;
        sc->delta[r] = r < rows ? delta[r] : 0;
    }
}

/* P into sc->p and dS into sc->ds for the tile of query rows row0.. and keys col0.. (k and v: the
 * tile's key and value rows where they lie), as probs_and_grads_ computes them. */
static void pairs_probs_and_grads_(const fa_backward_job *job, pairs_scratch_ *sc, int64_t batch, int64_t q_head,
                                   int64_t row0, int64_t rows, int64_t col0, int64_t cols, const uint16_t *k,
                                   const uint16_t *v)
{
    const fa_problem *p = job->problem;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    const fa_kernels_f32 *kern = job->kernels->f32;
    int64_t ld = job->ld;
    int full = fa_tile_fully_visible(p, row0, rows, col0, cols);
    kb->dot(cols, ld, p->dim, k, p->k.stride_seq, sc->qp, ld, sc->p, ld, (float)p->scale, 0);
    if (fa_problem_modifies_scores(p)) {
        fa_score_mods mods = fa_score_mods_of(p, sizeof(float), batch, q_head, row0, rows, col0);
        kern->modify(&mods, ld, cols, sc->p, sc->dcap);
    }
    if (!full) fa_epilogue_f32(p, row0, rows, col0, cols, sc->p, ld);
    kern->probabilities(ld, cols, sc->p, sc->lse);
    kb->dot(cols, ld, p->dim_v, v, p->v.stride_seq, sc->dop, ld, sc->ds, ld, 1.0f, 0);
    kern->score_grad(ld, cols, sc->p, sc->ds, sc->delta);
    if (!full) fa_zero_masked_f32(p, row0, rows, col0, cols, sc->ds, ld);
    if (sc->dcap) kern->scale_grad(ld, cols, sc->ds, sc->dcap);
}

/* Whether query row row0 + r sees key col. */
static int pairs_sees_(const fa_problem *p, int64_t row, int64_t col)
{
    fa_key_range keys = fa_visible_keys(p, row);
    return col >= keys.begin && col < keys.end;
}

/* acc[c][0..dim) += sum over the rows r that see key col0 + c of w[c][r]·x[r][..] (w: bf16 rows
 * [c][ld], x: the caller's bf16 rows): dK or dV on an edge tile whose rows hold an Inf or NaN. */
static void pairs_accumulate_t_visible_(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                                        int64_t dim, const uint16_t *w, int64_t ld, const uint16_t *x,
                                        int64_t x_stride, float *acc, int64_t acc_stride)
{
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = 0; r < rows; r++) {
            if (!pairs_sees_(p, row0 + r, col0 + c)) continue;
            float wr = fa_bf16_to_f32(w[c * ld + r]);
            for (int64_t y = 0; y < dim; y++) acc[c * acc_stride + y] += wr * fa_bf16_to_f32(x[r * x_stride + y]);
        }
}

/* dq_t[x][r] += sum over the keys c that row row0 + r sees of dS[c][r]·k[c][x] (dS in pairs of
 * keys): dQ on an edge tile whose key rows hold an Inf or NaN. */
static void pairs_accumulate_dq_visible_(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                                         const uint16_t *dsp, int64_t ld, const uint16_t *k, float *dq_t)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            if (!pairs_sees_(p, row0 + r, col0 + c)) continue;
            float w = fa_bf16_to_f32(dsp[(c / 2) * 2 * ld + 2 * r + c % 2]);
            for (int64_t x = 0; x < p->dim; x++)
                dq_t[x * ld + r] += w * fa_bf16_to_f32(k[c * p->k.stride_seq + x]);
        }
}

/* dK and dV of key block `block` of (batch, kv_head): every query head of the group and every query
 * block that sees it, in that order (as key_block_'s split plan), then rounded once. */
static void pairs_dkdv_item_(const fa_backward_job *job, fa_arena *arena, int64_t index)
{
    const fa_problem *p = job->problem;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    int64_t block = index % job->kv_blocks, bh = index / job->kv_blocks;
    int64_t batch = bh / p->kv_heads, kv_head = bh % p->kv_heads;
    int64_t bq = job->q_schedule.block_q, bk = job->block_k, ld = job->ld, d = p->dim, dv = p->dim_v;
    int64_t d_pad = fa_round_up(d, FA_PAD_ELEMS), dv_pad = fa_round_up(dv, FA_PAD_ELEMS);
    int64_t block0 = block * bk, block_cols = p->kv_len - block0 < bk ? p->kv_len - block0 : bk;
    pairs_scratch_ sc = pairs_scratch_alloc_(job, arena);
    float *dk_acc = sc.acc, *dv_acc = sc.acc + bk * d_pad;
    for (int64_t x = 0; x < block_cols * d_pad; x++) dk_acc[x] = 0;
    for (int64_t x = 0; x < block_cols * dv_pad; x++) dv_acc[x] = 0;
    const uint16_t *k = fa_view_at(&p->k, 2, batch, kv_head, block0), *v = fa_view_at(&p->v, 2, batch, kv_head, block0);
    for (int64_t g = 0; g < p->group; g++) {
        int64_t q_head = kv_head * p->group + g;
        for (int64_t row0 = 0; row0 < p->q_len; row0 += bq) {
            int64_t rows = p->q_len - row0 < bq ? p->q_len - row0 : bq;
            fa_key_blocks met = fa_key_blocks_seen(p, row0, rows, bk);
            if (block < met.first || block >= met.end) continue;
            fa_key_range seen = fa_tile_cols_seen(p, row0, rows, block0, block_cols);
            int64_t col0 = block0 + seen.begin, cols = seen.end - seen.begin;
            const uint16_t *kc = k + seen.begin * p->k.stride_seq, *vc = v + seen.begin * p->v.stride_seq;
            pairs_query_fill_(job, &sc, batch, q_head, row0, rows, 1);
            pairs_probs_and_grads_(job, &sc, batch, q_head, row0, rows, col0, cols, kc, vc);
            int full = fa_tile_fully_visible(p, row0, rows, col0, cols);
            const uint16_t *d_o = fa_view_at(&p->dout, 2, batch, q_head, row0), *q = fa_view_at(&p->q, 2, batch, q_head, row0);
            float *dv_at = dv_acc + seen.begin * dv_pad, *dk_at = dk_acc + seen.begin * d_pad;
            kb->rows_of(cols * ld, sc.p, sc.ab);
            if (!full && !sc.do_finite)
                pairs_accumulate_t_visible_(p, row0, rows, col0, cols, dv, sc.ab, ld, d_o, p->dout.stride_seq, dv_at, dv_pad);
            else
                kb->dot(cols, dv_pad, ld, sc.ab, ld, sc.do_rp, dv_pad, dv_at, dv_pad, 1.0f, 1);
            kb->rows_of(cols * ld, sc.ds, sc.ab);
            if (!full && !sc.q_finite)
                pairs_accumulate_t_visible_(p, row0, rows, col0, cols, d, sc.ab, ld, q, p->q.stride_seq, dk_at, d_pad);
            else
                kb->dot(cols, d_pad, ld, sc.ab, ld, sc.q_rp, d_pad, dk_at, d_pad, 1.0f, 1);
        }
    }
    kb->release();
    const float scale = (float)p->scale;
    char *dk = fa_view_at(&p->dk, 2, batch, kv_head, block0), *dvo = fa_view_at(&p->dv, 2, batch, kv_head, block0);
    for (int64_t c = 0; c < block_cols; c++) { /* rounded once, from the float sums */
        char *dk_row = dk + c * p->dk.stride_seq * 2, *dv_row = dvo + c * p->dv.stride_seq * 2;
        for (int64_t x = 0; x < d; x++) fa_half_store(FA_BF16, dk_row, x, scale * dk_acc[c * d_pad + x]);
        for (int64_t y = 0; y < dv; y++) fa_half_store(FA_BF16, dv_row, y, dv_acc[c * dv_pad + y]);
    }
}

/* dQ of one query block: every key block it sees, in order, summed transposed, then scaled,
 * transposed and rounded once. */
static void pairs_dq_item_(const fa_backward_job *job, fa_arena *arena, int64_t index)
{
    const fa_problem *p = job->problem;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    fa_q_item it = fa_q_schedule_item(&job->q_schedule, p, index);
    int64_t bk = job->block_k, ld = job->ld, d = p->dim, kv_head = it.q_head / p->group;
    pairs_scratch_ sc = pairs_scratch_alloc_(job, arena);
    float *dq_t = sc.acc;
    for (int64_t x = 0; x < d * ld; x++) dq_t[x] = 0;
    pairs_query_fill_(job, &sc, it.batch, it.q_head, it.row0, it.rows, 0);
    const uint16_t *k = fa_view_at(&p->k, 2, it.batch, kv_head, 0), *v = fa_view_at(&p->v, 2, it.batch, kv_head, 0);
    fa_key_blocks met = fa_key_blocks_seen(p, it.row0, it.rows, bk);
    for (int64_t block0 = met.first * bk; block0 < met.end * bk; block0 += bk) {
        fa_key_range seen =
            fa_tile_cols_seen(p, it.row0, it.rows, block0, p->kv_len - block0 < bk ? p->kv_len - block0 : bk);
        int64_t col0 = block0 + seen.begin, cols = seen.end - seen.begin;
        if (cols == 0) continue;
        const uint16_t *kc = k + col0 * p->k.stride_seq, *vc = v + col0 * p->v.stride_seq;
        pairs_probs_and_grads_(job, &sc, it.batch, it.q_head, it.row0, it.rows, col0, cols, kc, vc);
        int64_t cols_k = fa_round_up(cols, kb->pad_k);
        int finite = kb->pack_rows_t(cols, d, kc, p->k.stride_seq, sc.kt, cols_k);
        kb->pairs_of(ld, cols, sc.ds, sc.ab);
        if (!fa_tile_fully_visible(p, it.row0, it.rows, col0, cols) && !finite)
            pairs_accumulate_dq_visible_(p, it.row0, it.rows, col0, cols, sc.ab, ld, kc, dq_t);
        else
            kb->dot(d, ld, cols_k, sc.kt, cols_k, sc.ab, ld, dq_t, ld, 1.0f, 1);
    }
    kb->release();
    const float scale = (float)p->scale;
    char *dq = fa_view_at(&p->dq, 2, it.batch, it.q_head, it.row0);
    for (int64_t r = 0; r < it.rows; r++) /* rounded once, from the float sums */
        for (int64_t x = 0; x < d; x++) fa_half_store(FA_BF16, dq + r * p->dq.stride_seq * 2, x, scale * dq_t[x * ld + r]);
}

/* The split plan's second phase on the path: dK/dV items, then dQ items. */
static void pairs_grad_item_(const fa_backward_job *job, fa_arena *arena, int64_t index)
{
    if (index < job->kv_items)
        pairs_dkdv_item_(job, arena, index);
    else
        pairs_dq_item_(job, arena, index - job->kv_items);
}
