/* SPDX-License-Identifier: BSD-3-Clause */
/* The backward's tile products on a table's bf16 dot-product units (kernels.h, "bf16 on
 * dot-product units"), the set backward_grads.h runs for an all-bf16 call that takes them
 * (backward.c, takes_dot), under every plan. Included by backward_items.h in its float
 * instantiation (FA_T = float), before backward_grads.h with FA_SET = dot.
 *
 * Per tile of query rows r and keys c, with every product C[m][n] += A[m][k]·B[k][n] of the dot:
 *   S  = K·Qᵀ      A = K rows where they lie, B = Q in pairs along D      -> s[c][r], scaled
 *   dP = V·dOᵀ     A = V rows where they lie, B = dO in pairs along Dv    -> dp[c][r]
 *   dV += P·dO     A = P as bf16 rows [c][r], B = dO in pairs of rows     -> dv[c][y]
 *   dK += dS·Q     A = dS as bf16 rows [c][r], B = Q in pairs of rows     -> dk[c][x]
 *   dQᵀ += Kᵀ·dS   A = Kᵀ packed per tile, B = dS in pairs of keys        -> dq_t[x][r]
 * so no product needs a transpose of a score tile, and dQ accumulates transposed, in the dQ item's
 * arena or in the call's sums buffer (summed in float and rounded once). P and dS are rounded to
 * bf16 for the products that read them (flashattn.h, fa_backward). On a mask's edge, a masked P or
 * dS is an exact zero, but 0·Inf is
 * NaN: where the other operand of one of the last three products holds an Inf or NaN (the packs
 * report it), that product is summed over the visible pairs only, one element at a time
 * (visible_products.h says why). */

#define FA_SET_DQ_IN_ROWS 0

/* What every item of the set holds in its arena (the same regions for both kinds of item). */
typedef struct {
    uint16_t *qp, *dop;     /* Q, dO in pairs along D, Dv (the B of S and dP) */
    uint16_t *q_rp, *do_rp; /* Q, dO in pairs of rows (the B of dK and dV) */
    float *lse, *delta;     /* ld rows: -inf and 0 past the block's rows */
    int q_finite, do_finite;
    const uint16_t *q, *d_o; /* the block's rows where they lie (the visible-keys products) */
    float *p, *ds, *dcap;    /* key-major float tiles, bk × ld (dcap: with a softcap) */
    uint16_t *ab;            /* P or dS as bf16 rows, or dS in pairs of keys */
    uint16_t *kt;            /* Kᵀ (dQ products) */
    const uint16_t *k, *v;   /* the key rows where they lie */
    int64_t k_stride, v_stride;
    float *acc; /* dK [bk][up(D)] then dV [bk][up(Dv)], or dQᵀ [D][ld] */
} FA_SET_NAME(grads_scratch_);

/* A query block's dQ sums (a dQ item's accumulator, or the block's tile of the call's sums buffer
 * under the fused and wavefront plans): transposed, [D][ld]. Their bytes, the row stride
 * accumulate_queries_ takes (unused: ld), element (query row r, dim x), and a zeroing. */
static size_t FA_SET_NAME(dq_sums_bytes_)(const fa_backward_job *job)
{
    return fa_arena_tile((size_t)job->problem->dim, (size_t)job->ld, sizeof(float));
}

static int64_t FA_SET_NAME(dq_sums_stride_)(const fa_backward_job *job)
{
    return job->ld;
}

static float FA_SET_NAME(dq_at_)(const float *sums, const fa_backward_job *job, int64_t r, int64_t x)
{
    return sums[x * job->ld + r];
}

static void FA_SET_NAME(dq_zero_)(float *sums, const fa_backward_job *job, int64_t rows)
{
    (void)rows;
    for (int64_t x = 0; x < job->problem->dim * job->ld; x++) sums[x] = 0;
}

/* The regions, in this order (sizing and carving alike, plan/scratch.h); u(x) = x up to 16. */
static void FA_SET_NAME(grads_carve_)(fa_scratch *sc, const fa_backward_job *job,
                                      FA_SET_NAME(grads_scratch_) * s)
{
    const fa_problem *p = job->problem;
    const size_t h = sizeof(uint16_t), f = sizeof(float), ld = (size_t)job->ld, bk = (size_t)job->block_k;
    const int64_t pad_k = job->kernels->bf16->pad_k;
    const size_t d = (size_t)p->dim, d16 = (size_t)fa_round_up(p->dim, FA_PAD_ELEMS),
                 dv16 = (size_t)fa_round_up(p->dim_v, FA_PAD_ELEMS),
                 bk_k = (size_t)fa_round_up(job->block_k, pad_k);
    s->qp = fa_scratch_take(sc, (size_t)fa_round_up(p->dim, pad_k), ld, h);
    s->dop = fa_scratch_take(sc, (size_t)fa_round_up(p->dim_v, pad_k), ld, h);
    s->q_rp = fa_scratch_take(sc, ld, d16, h);
    s->do_rp = fa_scratch_take(sc, ld, dv16, h);
    s->lse = fa_scratch_take(sc, 1, ld, f);
    s->delta = fa_scratch_take(sc, 1, ld, f);
    s->p = fa_scratch_take(sc, bk, ld, f);
    s->ds = fa_scratch_take(sc, bk, ld, f);
    s->dcap = p->softcap > 0 ? fa_scratch_take(sc, bk, ld, f) : NULL;
    s->ab = fa_scratch_take(sc, bk_k, ld, h);
    s->kt = fa_scratch_take(sc, d, bk_k, h);
    size_t keys = fa_size_add(fa_arena_tile(bk, d16, f), fa_arena_tile(bk, dv16, f)),
           queries = FA_SET_NAME(dq_sums_bytes_)(job);
    s->acc = fa_scratch_take(sc, keys > queries ? keys : queries, 1, 1);
    s->q_finite = s->do_finite = 1;
}

/* Query rows [row0, row0 + rows) of (batch, q_head): packed in pairs for S and dP, and, for a key
 * block's item (keys), in pairs of rows for dK and dV. */
static void FA_SET_NAME(query_fill_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job,
                                     int64_t batch, int64_t q_head, int64_t row0, int64_t rows, int keys)
{
    const fa_problem *p = job->problem;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    const int64_t ld = job->ld;
    s->q = fa_view_at(&p->q, 2, batch, q_head, row0);
    s->d_o = fa_view_at(&p->dout, 2, batch, q_head, row0);
    kb->pack_pairs(rows, p->dim, s->q, p->q.stride_seq, s->qp, ld);
    kb->pack_pairs(rows, p->dim_v, s->d_o, p->dout.stride_seq, s->dop, ld);
    if (keys) {
        s->q_finite = kb->pack_rows_pairs(rows, ld, p->dim, s->q, p->q.stride_seq, s->q_rp,
                                          fa_round_up(p->dim, FA_PAD_ELEMS));
        s->do_finite = kb->pack_rows_pairs(rows, ld, p->dim_v, s->d_o, p->dout.stride_seq, s->do_rp,
                                           fa_round_up(p->dim_v, FA_PAD_ELEMS));
    }
}

/* Keys [col0, col0 + cols) of (batch, kv_head): read where they lie. */
static void FA_SET_NAME(kv_fill_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job, int64_t batch,
                                  int64_t kv_head, int64_t col0, int64_t cols)
{
    (void)cols;
    const fa_problem *p = job->problem;
    s->k = fa_view_at(&p->k, 2, batch, kv_head, col0);
    s->v = fa_view_at(&p->v, 2, batch, kv_head, col0);
    s->k_stride = p->k.stride_seq;
    s->v_stride = p->v.stride_seq;
}

/* S = scale·K·Qᵀ into s->p. */
static void FA_SET_NAME(scores_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job, int64_t row0,
                                 int64_t rows, int64_t col0, int64_t cols, int64_t key)
{
    (void)row0, (void)rows, (void)col0;
    const fa_problem *p = job->problem;
    job->kernels->bf16->dot(cols, job->ld, p->dim, s->k + key * s->k_stride, s->k_stride, s->qp, job->ld,
                            s->p, job->ld, (float)p->scale, 0);
}

/* dP = V·dOᵀ into s->ds. */
static void FA_SET_NAME(value_grads_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job,
                                      int64_t row0, int64_t rows, int64_t col0, int64_t cols, int64_t key)
{
    (void)row0, (void)rows, (void)col0;
    const fa_problem *p = job->problem;
    job->kernels->bf16->dot(cols, job->ld, p->dim_v, s->v + key * s->v_stride, s->v_stride, s->dop, job->ld,
                            s->ds, job->ld, 1.0f, 0);
}

/* Whether query row `row` sees key `col`. */
static int dot_sees_(const fa_problem *p, int64_t row, int64_t col)
{
    fa_key_range keys = fa_visible_keys(p, row);
    return col >= keys.begin && col < keys.end;
}

/* acc[c][0..dim) += sum over the rows r that see key col0 + c of w[c][r]·x[r][..] (w: bf16 rows
 * [c][ld], x: the caller's bf16 rows): dK or dV on an edge tile whose rows hold an Inf or NaN. */
static void dot_accumulate_t_visible_(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0,
                                      int64_t cols, int64_t dim, const uint16_t *w, int64_t ld,
                                      const uint16_t *x, int64_t x_stride, float *acc, int64_t acc_stride)
{
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = 0; r < rows; r++) {
            if (!dot_sees_(p, row0 + r, col0 + c)) continue;
            float wr = fa_bf16_to_f32(w[c * ld + r]);
            for (int64_t y = 0; y < dim; y++)
                acc[c * acc_stride + y] += wr * fa_bf16_to_f32(x[r * x_stride + y]);
        }
}

/* dq_t[x][r] += sum over the keys c that row row0 + r sees of dS[c][r]·k[c][x] (dS in pairs of
 * keys): dQ on an edge tile whose key rows hold an Inf or NaN. */
static void dot_accumulate_dq_visible_(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0,
                                       int64_t cols, const uint16_t *dsp, int64_t ld, const uint16_t *k,
                                       int64_t k_stride, float *dq_t)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            if (!dot_sees_(p, row0 + r, col0 + c)) continue;
            float w = fa_bf16_to_f32(dsp[(c / 2) * 2 * ld + 2 * r + c % 2]);
            for (int64_t x = 0; x < p->dim; x++) dq_t[x * ld + r] += w * fa_bf16_to_f32(k[c * k_stride + x]);
        }
}

/* dV += P·dO and dK += dS·Q for the tile (dv_acc, dk_acc: the rows of key col0), P and dS rounded
 * to bf16 rows once each. */
static void FA_SET_NAME(accumulate_keys_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job,
                                          int64_t row0, int64_t rows, int64_t col0, int64_t cols, int full,
                                          float *dk_acc, float *dv_acc)
{
    const fa_problem *p = job->problem;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    const int64_t ld = job->ld, d_pad = fa_round_up(p->dim, FA_PAD_ELEMS),
                  dv_pad = fa_round_up(p->dim_v, FA_PAD_ELEMS);
    kb->rows_of(cols * ld, s->p, s->ab);
    if (!full && !s->do_finite)
        dot_accumulate_t_visible_(p, row0, rows, col0, cols, p->dim_v, s->ab, ld, s->d_o, p->dout.stride_seq,
                                  dv_acc, dv_pad);
    else
        kb->dot(cols, dv_pad, ld, s->ab, ld, s->do_rp, dv_pad, dv_acc, dv_pad, 1.0f, 1);
    kb->rows_of(cols * ld, s->ds, s->ab);
    if (!full && !s->q_finite)
        dot_accumulate_t_visible_(p, row0, rows, col0, cols, p->dim, s->ab, ld, s->q, p->q.stride_seq, dk_acc,
                                  d_pad);
    else
        kb->dot(cols, d_pad, ld, s->ab, ld, s->q_rp, d_pad, dk_acc, d_pad, 1.0f, 1);
}

/* dQᵀ += Kᵀ·dS for the tile into the transposed accumulator (acc_stride unused: its rows are ld
 * apart); `key` is the tile's first key among the rows kv_fill_ pointed at. */
static void FA_SET_NAME(accumulate_queries_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job,
                                             int64_t row0, int64_t rows, int64_t col0, int64_t cols, int full,
                                             int64_t key, float *acc, int64_t acc_stride)
{
    (void)acc_stride;
    const fa_problem *p = job->problem;
    const fa_kernels_bf16 *kb = job->kernels->bf16;
    const int64_t ld = job->ld, cols_k = fa_round_up(cols, kb->pad_k);
    const uint16_t *k = s->k + key * s->k_stride;
    int finite = kb->pack_rows_t(cols, p->dim, k, s->k_stride, s->kt, cols_k);
    kb->pairs_of(ld, cols, s->ds, s->ab);
    if (!full && !finite)
        dot_accumulate_dq_visible_(p, row0, rows, col0, cols, s->ab, ld, k, s->k_stride, acc);
    else
        kb->dot(p->dim, ld, cols_k, s->kt, cols_k, s->ab, ld, acc, ld, 1.0f, 1);
}

/* The item is done with the units: state a dot keeps between calls (AMX's tiles) is dropped. */
static void FA_SET_NAME(release_)(const fa_backward_job *job)
{
    job->kernels->bf16->release();
}
