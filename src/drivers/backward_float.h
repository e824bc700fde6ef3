/* SPDX-License-Identifier: BSD-3-Clause */
/* The backward's tile products on the table's float kernels, the set backward_grads.h runs for
 * every call but an all-bf16 one on dot-product units. Included by backward_items.h with FA_T,
 * FA_SFX (f32/f64: also the kernel-table member) and FA_PAD_ELEMS defined, before backward_grads.h
 * with FA_SET = FA_SFX.
 *
 * Q and dO are packed transposed per query block (qt pre-scaled, so S comes out scaled); P, dS and
 * the softcap's derivative are key-major tiles; dK and dV accumulate row-major per key, dQ row-major
 * per query row (in the arena, in the call's sums buffer, or in the caller's dq: backward_grads.h).
 * Rows stored in another type (bf16, f16) are widened into the arena first. */

/* Under the fused and wavefront plans a key block's tiles may add their dS·K to the caller's dq
 * rows (a float dq: its layout is the sums'). */
#define FA_SET_DQ_IN_ROWS 1

/* What every item of the set holds in its arena (the same regions for both kinds of item, so both
 * reach one high-water mark, whichever plan the thread count picks). */
typedef struct {
    FA_T *qt, *dot;         /* Q (scaled) and dO of a query block, packed transposed */
    FA_T *lse, *delta;      /* ld rows: -inf and 0 past the block's rows */
    FA_T *q_wide, *do_wide; /* the block's Q and dO rows widened from half precision (or NULL) */
    const FA_T *q, *d_o;    /* the rows dK += dSᵀ·Q and dV += Pᵀ·dO read: the caller's or widened */
    int64_t q_stride, do_stride;
    FA_T *p, *ds, *dcap;   /* key-major tiles, bk × ld (dcap: with a softcap) */
    FA_T *k_wide, *v_wide; /* a key block's K and V rows widened from half precision (or NULL) */
    const FA_T *k, *v;     /* the key rows the products read: the caller's or widened */
    int64_t k_stride, v_stride;
    FA_T *acc; /* dK [bk][up(D)] then dV [bk][up(Dv)], or dQ [bq][up(D)] */
} FA_SET_NAME(grads_scratch_);

/* A query block's dQ sums (a dQ item's accumulator, or the block's tile of the call's sums buffer
 * under the fused and wavefront plans, backward_grads.h): row-major, rows up(D) apart. Their bytes,
 * the row stride accumulate_queries_ takes, element (query row r, dim x), and a zeroing of the
 * first `rows` rows. */
static size_t FA_SET_NAME(dq_sums_bytes_)(const fa_backward_job *job)
{
    return fa_arena_tile((size_t)job->q_schedule.block_q,
                         (size_t)fa_round_up(job->problem->dim, FA_PAD_ELEMS), sizeof(FA_T));
}

static int64_t FA_SET_NAME(dq_sums_stride_)(const fa_backward_job *job)
{
    return fa_round_up(job->problem->dim, FA_PAD_ELEMS);
}

static FA_T FA_SET_NAME(dq_at_)(const FA_T *sums, const fa_backward_job *job, int64_t r, int64_t x)
{
    return sums[r * FA_SET_NAME(dq_sums_stride_)(job) + x];
}

static void FA_SET_NAME(dq_zero_)(FA_T *sums, const fa_backward_job *job, int64_t rows)
{
    for (int64_t x = 0; x < rows * FA_SET_NAME(dq_sums_stride_)(job); x++) sums[x] = 0;
}

/* The regions, in this order (sizing and carving alike, plan/scratch.h): the accumulators are one
 * region as large as the larger of a key block's and a query block's. */
static void FA_SET_NAME(grads_carve_)(fa_scratch *sc, const fa_backward_job *job,
                                      FA_SET_NAME(grads_scratch_) * s)
{
    const fa_problem *p = job->problem;
    const size_t e = sizeof(FA_T), ld = (size_t)job->ld, bq = (size_t)job->q_schedule.block_q;
    const size_t bk = (size_t)job->block_k, d = (size_t)p->dim, dv = (size_t)p->dim_v;
    const size_t d_pad = (size_t)fa_round_up(p->dim, FA_PAD_ELEMS),
                 dv_pad = (size_t)fa_round_up(p->dim_v, FA_PAD_ELEMS);
    s->qt = fa_scratch_take(sc, d, ld, e);
    s->dot = fa_scratch_take(sc, dv, ld, e);
    s->lse = fa_scratch_take(sc, 1, ld, e);
    s->delta = fa_scratch_take(sc, 1, ld, e);
    s->q_wide = s->do_wide = NULL;
    if (fa_q_widens(p)) {
        s->q_wide = fa_scratch_take(sc, bq, d, e);
        s->do_wide = fa_scratch_take(sc, bq, dv, e);
    }
    s->p = fa_scratch_take(sc, bk, ld, e);
    s->ds = fa_scratch_take(sc, bk, ld, e);
    s->dcap = p->softcap > 0 ? fa_scratch_take(sc, bk, ld, e) : NULL;
    s->k_wide = s->v_wide = NULL;
    if (fa_kv_widens(p)) {
        s->k_wide = fa_scratch_take(sc, bk, d, e);
        s->v_wide = fa_scratch_take(sc, bk, dv, e);
    }
    size_t keys = fa_size_add(fa_arena_tile(bk, d_pad, e), fa_arena_tile(bk, dv_pad, e));
    size_t queries = FA_SET_NAME(dq_sums_bytes_)(job);
    s->acc = fa_scratch_take(sc, keys > queries ? keys : queries, 1, 1);
}

/* Query rows [row0, row0 + rows) of (batch, q_head): Q and dO packed for S and dP, and their rows
 * for dK and dV (keys: a key block's item reads them; a dQ item does not, which changes nothing
 * here). */
static void FA_SET_NAME(query_fill_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job,
                                     int64_t batch, int64_t q_head, int64_t row0, int64_t rows, int keys)
{
    (void)keys;
    const fa_problem *p = job->problem;
    const FA_CAT(fa_kernels_, FA_SFX) *kern = job->kernels->FA_SFX;
    const size_t q_elem = fa_elem_size(p->q_type);
    const void *q = fa_view_at(&p->q, q_elem, batch, q_head, row0);
    const void *d_o = fa_view_at(&p->dout, q_elem, batch, q_head, row0);
    if (s->q_wide) {
        kern->widen(rows, p->dim, q, p->q.stride_seq, p->q_type, NULL, 0, s->q_wide, p->dim);
        kern->widen(rows, p->dim_v, d_o, p->dout.stride_seq, p->q_type, NULL, 0, s->do_wide, p->dim_v);
        s->q = s->q_wide, s->q_stride = p->dim;
        s->d_o = s->do_wide, s->do_stride = p->dim_v;
    } else {
        s->q = q, s->q_stride = p->q.stride_seq;
        s->d_o = d_o, s->do_stride = p->dout.stride_seq;
    }
    kern->pack_transposed(rows, p->dim, s->q, s->q_stride, (FA_T)p->scale, s->qt, job->ld);
    kern->pack_transposed(rows, p->dim_v, s->d_o, s->do_stride, (FA_T)1, s->dot, job->ld);
}

/* Keys [col0, col0 + cols) of (batch, kv_head) where the products read them: the caller's rows, or
 * widened from half precision (cols <= block_k). */
static void FA_SET_NAME(kv_fill_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job, int64_t batch,
                                  int64_t kv_head, int64_t col0, int64_t cols)
{
    const fa_problem *p = job->problem;
    const size_t elem = fa_elem_size(p->kv_type);
    const void *k = fa_view_at(&p->k, elem, batch, kv_head, col0),
               *v = fa_view_at(&p->v, elem, batch, kv_head, col0);
    if (s->k_wide) {
        job->kernels->FA_SFX->widen(cols, p->dim, k, p->k.stride_seq, p->kv_type, NULL, 0, s->k_wide, p->dim);
        job->kernels->FA_SFX->widen(cols, p->dim_v, v, p->v.stride_seq, p->kv_type, NULL, 0, s->v_wide,
                                    p->dim_v);
        s->k = s->k_wide, s->k_stride = p->dim;
        s->v = s->v_wide, s->v_stride = p->dim_v;
    } else {
        s->k = k, s->k_stride = p->k.stride_seq;
        s->v = v, s->v_stride = p->v.stride_seq;
    }
}

/* S (scaled, from the pre-scaled Q) into s->p, over the key rows k of the tile (query rows row0..,
 * keys col0..): on a mask's edge only the row vectors that see a key (visible_products.h), the
 * others -inf, as the modifiers read them before the epilogue. */
static void FA_SET_NAME(scores_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job, int64_t row0,
                                 int64_t rows, int64_t col0, int64_t cols, int64_t key)
{
    FA_CAT(fa_scores_visible_, FA_SFX)
    (job->kernels->FA_SFX, job->problem, row0, rows, col0, cols, job->problem->dim, s->qt, job->ld,
     s->k + key * s->k_stride, s->k_stride, s->p, 1);
}

/* dP = dO·Vᵀ into s->ds, the same rows (the masked ones left as they were: dS there is zeroed). */
static void FA_SET_NAME(value_grads_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job,
                                      int64_t row0, int64_t rows, int64_t col0, int64_t cols, int64_t key)
{
    FA_CAT(fa_scores_visible_, FA_SFX)
    (job->kernels->FA_SFX, job->problem, row0, rows, col0, cols, job->problem->dim_v, s->dot, job->ld,
     s->v + key * s->v_stride, s->v_stride, s->ds, 0);
}

/* dV += Pᵀ·dO and dK += dSᵀ·Q for the tile (dv_acc, dk_acc: the rows of key col0), over the keys
 * each row sees. */
static void FA_SET_NAME(accumulate_keys_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job,
                                          int64_t row0, int64_t rows, int64_t col0, int64_t cols, int full,
                                          FA_T *dk_acc, FA_T *dv_acc)
{
    (void)full;
    const fa_problem *p = job->problem;
    const FA_CAT(fa_kernels_, FA_SFX) *kern = job->kernels->FA_SFX;
    const int64_t d_pad = fa_round_up(p->dim, FA_PAD_ELEMS), dv_pad = fa_round_up(p->dim_v, FA_PAD_ELEMS);
    FA_CAT(fa_accumulate_t_visible_, FA_SFX)
    (kern, p, row0, rows, col0, cols, p->dim_v, s->p, job->ld, s->d_o, s->do_stride, dv_acc, dv_pad);
    FA_CAT(fa_accumulate_t_visible_, FA_SFX)
    (kern, p, row0, rows, col0, cols, p->dim, s->ds, job->ld, s->q, s->q_stride, dk_acc, d_pad);
}

/* dQ += dS·K for the tile (acc: query row0's row, row-major, acc_stride apart), over the keys each
 * row sees; `key` is the tile's first key among the rows kv_fill_ staged. */
static void FA_SET_NAME(accumulate_queries_)(FA_SET_NAME(grads_scratch_) * s, const fa_backward_job *job,
                                             int64_t row0, int64_t rows, int64_t col0, int64_t cols, int full,
                                             int64_t key, FA_T *acc, int64_t acc_stride)
{
    (void)full;
    const fa_problem *p = job->problem;
    FA_CAT(fa_accumulate_visible_, FA_SFX)
    (job->kernels->FA_SFX, p, row0, rows, col0, cols, p->dim, s->ds, job->ld, s->k + key * s->k_stride,
     s->k_stride, acc, acc_stride);
}

/* The item is done with the units (nothing to release for the float kernels). */
static void FA_SET_NAME(release_)(const fa_backward_job *job)
{
    (void)job;
}
