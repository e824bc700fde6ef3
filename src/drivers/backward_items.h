/* SPDX-License-Identifier: BSD-3-Clause */
/* The backward's work items, written once for both element types: included by backward.c with
 * FA_T, FA_SFX (f32/f64: also the kernel-table member), FA_EXP (exp of FA_T), FA_PAD_ELEMS (the
 * padding unit of accumulator rows, kernels.h) and FA_PAIRS_PATH (1 for float: the bf16
 * dot-product path of backward_pairs.h) defined.
 *
 * With P = exp(S - lse) recomputed tile by tile (S = scaled scores, from the packed, pre-scaled
 * queries) and dS = P ∘ (dO·Vᵀ - delta):
 *   dV = Pᵀ·dO,  dK = scale · dSᵀ·Q,  dQ = scale · dS·K.
 * Three plans give the same bits (backward.c picks one per call, fa_backward_plan_for):
 * - split: a dK/dV item owns the rows of one key block and walks every query head of its group and
 *   every query block in a fixed order; a dQ item owns the rows of one query block and walks the key
 *   blocks in order, recomputing P and dS (14 of every 10 useful FLOPs, but fine-grained items);
 * - fused: a head item owns one (batch, kv head) and walks its key blocks as the dK/dV items do,
 *   adding each tile's dS·K to dQ on the way: no recomputation, but B·Hkv coarse items;
 * - wavefront: the split plan's dK/dV items, each also adding its tiles' dS·K to dQ as the fused
 *   item does; a per-query-block counter hands each block's dQ rows from one key block to the
 *   next, so they are summed in the same key order as under the other plans, without dQ items.
 * Under split and fused no two items write the same byte; under wavefront the items that share
 * dQ rows write them one after another, in key order. Nothing is ever summed in an order that
 * depends on the team. */

#include "template.h"
#define FA_KERN(job)  ((job)->kernels->FA_SFX)

/* The dq rows [row0, row0 + rows) of one head (row stride `stride`): every plan starts a query
 * block's dQ sums at +0 and ends them multiplied by the scale, as a dQ item does with its
 * accumulator. */
static void FA_NAME(dq_rows_zero_)(FA_T *dq, int64_t stride, int64_t row0, int64_t rows, int64_t dim)
{
    for (int64_t r = row0; r < row0 + rows; r++)
        for (int64_t x = 0; x < dim; x++) dq[r * stride + x] = 0;
}

static void FA_NAME(dq_rows_scale_)(FA_T *dq, int64_t stride, int64_t row0, int64_t rows, int64_t dim,
                                    FA_T scale)
{
    for (int64_t r = row0; r < row0 + rows; r++)
        for (int64_t x = 0; x < dim; x++) dq[r * stride + x] = scale * dq[r * stride + x];
}

/* sum_y a[y]·b[y] in a fixed order (eight interleaved partial sums, then those in order), which
 * does not depend on where a and b lie: half-precision rows, widened into the arena first, give
 * the bits their float widening gives. */
static FA_T FA_NAME(dot_)(const FA_T *a, const FA_T *b, int64_t n)
{
    FA_T part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t y = 0;
    for (; y + 8 <= n; y += 8)
        for (int j = 0; j < 8; j++) part[j] += a[y + j] * b[y + j];
    for (int j = 0; y + j < n; j++) part[j] += a[y + j] * b[y + j];
    return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

/* delta[row] = sum_y dO[row][y] · O[row][y] for the rows of one query item. */
static void FA_NAME(delta_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_backward_job *job = job_ptr;
    const fa_problem *p = job->problem;
    fa_q_item it = fa_q_schedule_item(&job->q_schedule, p, index);
    const size_t q_elem = fa_elem_size(p->q_type);
    const int half = fa_dtype_is_half(p->q_type);
    const char *o = (const char *)fa_view_at(&p->out, q_elem, it.batch, it.q_head, 0);
    const char *d_o = (const char *)fa_view_at(&p->dout, q_elem, it.batch, it.q_head, 0);
    FA_T *delta = (FA_T *)job->delta + (it.batch * p->q_heads + it.q_head) * p->lse_head_stride;
    FA_T *o_wide = half ? fa_arena_alloc(arena, (size_t)p->dim_v * sizeof(FA_T)) : NULL;
    FA_T *do_wide = half ? fa_arena_alloc(arena, (size_t)p->dim_v * sizeof(FA_T)) : NULL;
    for (int64_t i = it.row0; i < it.row0 + it.rows; i++) {
        const void *orow = o + i * p->out.stride_seq * (int64_t)q_elem;
        const void *drow = d_o + i * p->dout.stride_seq * (int64_t)q_elem;
        if (half) {
            FA_KERN(job)->widen(1, p->dim_v, orow, 0, p->q_type, o_wide, 0);
            FA_KERN(job)->widen(1, p->dim_v, drow, 0, p->q_type, do_wide, 0);
            orow = o_wide, drow = do_wide;
        }
        delta[i] = FA_NAME(dot_)(drow, orow, p->dim_v);
    }
    if (job->plan != FA_BACKWARD_PLAN_WAVEFRONT) return;
    /* The wavefront plan's dQ hand-off starts at 0 for this query block; a block that meets no key
     * block gets its dq (scale·0, as the other plans write it) here, since no key block item will. */
    atomic_store_explicit(fa_backward_dq_progress(job, it.batch, it.q_head, it.row0), 0,
                          memory_order_relaxed);
    fa_key_blocks met = fa_key_blocks_seen(p, it.row0, it.rows, job->block_k);
    if (met.end == met.first) {
        FA_T *dq = (FA_T *)fa_view_at(&p->dq, sizeof(FA_T), it.batch, it.q_head, 0); /* f32: not split */
        FA_NAME(dq_rows_zero_)(dq, p->dq.stride_seq, it.row0, it.rows, p->dim);
        FA_NAME(dq_rows_scale_)(dq, p->dq.stride_seq, it.row0, it.rows, p->dim, (FA_T)p->scale);
    }
}

/* dsinks[h] = -sum over batches b and rows i of P_sink(b, h, i) · delta(b, h, i), with the sink's
 * probability P_sink = exp(sink[h] - lse): the sink is one more logit whose value row is zero, so its
 * score gradient is P_sink·(0 - delta). One item per query head sums b-major, then i, in FA_T. */
static void FA_NAME(sink_grad_item_)(const void *job_ptr, fa_arena *arena, int64_t h)
{
    (void)arena;
    const fa_backward_job *job = job_ptr;
    const fa_problem *p = job->problem;
    const FA_T sink = (FA_T)p->sinks[h];
    FA_T sum = 0;
    for (int64_t b = 0; b < p->batch; b++) {
        fa_problem one; /* the rows of batch b (or sequence b), wherever its lse and delta start */
        fa_problem_sequence(p, b, &one);
        int64_t at =
            ((const char *)one.lse - (const char *)p->lse) / (int64_t)sizeof(FA_T) + h * p->lse_head_stride;
        const FA_T *lse = (const FA_T *)p->lse + at, *delta = (const FA_T *)job->delta + at;
        /* lse = -inf only when the sink is -inf too and the row saw no key: P_sink is 0 there (not
         * exp(-inf + inf)), as the probabilities kernel has it */
        for (int64_t i = 0; i < one.q_len; i++)
            if (lse[i] != -(FA_T)INFINITY) sum += FA_EXP(sink - lse[i]) * delta[i];
    }
    p->dsinks[h] = (float)(0 - sum); /* +0, not -0, when there is nothing to sum */
}

/* What one query block brings to every tile it meets: queries and dO packed transposed, and the
 * row statistics lse and delta, padded to ld rows (lse = -inf there, so padding rows give p = 0);
 * and the block's query and dO rows as dK += dSᵀ·Q and dV += Pᵀ·dO read them (q, d_o, their row
 * strides): the caller's rows, or, for half-precision queries, their widened copies q_rows and
 * do_rows in the arena. */
typedef struct {
    FA_T *qt, *dot, *lse, *delta;
    FA_T *q_rows, *do_rows;
    const FA_T *q, *d_o;
    int64_t q_stride, do_stride;
} FA_NAME(query_pack_);

static FA_NAME(query_pack_) FA_NAME(query_pack_alloc_)(const fa_backward_job *job, fa_arena *arena)
{
    const fa_problem *p = job->problem;
    int64_t ld = job->ld;
    FA_NAME(query_pack_) qp;
    qp.qt = fa_arena_alloc(arena, (size_t)(p->dim * ld) * sizeof(FA_T));
    qp.dot = fa_arena_alloc(arena, (size_t)(p->dim_v * ld) * sizeof(FA_T));
    qp.lse = fa_arena_alloc(arena, (size_t)ld * sizeof(FA_T));
    qp.delta = fa_arena_alloc(arena, (size_t)ld * sizeof(FA_T));
    qp.q_rows = qp.do_rows = NULL;
    if (fa_dtype_is_half(p->q_type)) {
        qp.q_rows = fa_arena_alloc(arena, (size_t)(job->q_schedule.block_q * p->dim) * sizeof(FA_T));
        qp.do_rows = fa_arena_alloc(arena, (size_t)(job->q_schedule.block_q * p->dim_v) * sizeof(FA_T));
    }
    return qp;
}

static void FA_NAME(query_pack_fill_)(const fa_backward_job *job, FA_NAME(query_pack_) * qp, int64_t batch,
                                      int64_t q_head, int64_t row0, int64_t rows)
{
    const fa_problem *p = job->problem;
    int64_t ld = job->ld, rows_at = (batch * p->q_heads + q_head) * p->lse_head_stride + row0;
    const size_t q_elem = fa_elem_size(p->q_type);
    const void *q = fa_view_at(&p->q, q_elem, batch, q_head, row0);
    const void *d_o = fa_view_at(&p->dout, q_elem, batch, q_head, row0);
    if (qp->q_rows) {
        FA_KERN(job)->widen(rows, p->dim, q, p->q.stride_seq, p->q_type, qp->q_rows, p->dim);
        FA_KERN(job)->widen(rows, p->dim_v, d_o, p->dout.stride_seq, p->q_type, qp->do_rows, p->dim_v);
        qp->q = qp->q_rows, qp->q_stride = p->dim;
        qp->d_o = qp->do_rows, qp->do_stride = p->dim_v;
    } else {
        qp->q = q, qp->q_stride = p->q.stride_seq;
        qp->d_o = d_o, qp->do_stride = p->dout.stride_seq;
    }
    FA_KERN(job)->pack_transposed(rows, p->dim, qp->q, qp->q_stride, (FA_T)p->scale, qp->qt, ld);
    FA_KERN(job)->pack_transposed(rows, p->dim_v, qp->d_o, qp->do_stride, (FA_T)1, qp->dot, ld);
    const FA_T *lse = (const FA_T *)p->lse + rows_at, *delta = (const FA_T *)job->delta + rows_at;
    for (int64_t r = 0; r < ld; r++) {
        qp->lse[r] = r < rows ? lse[r] : -(FA_T)INFINITY;
        qp->delta[r] = r < rows ? delta[r] : 0;
    }
}

/* The tiles of one item: P, dS and, with a softcap, its derivative 1 - tanh² per score. */
typedef struct {
    FA_T *p, *ds, *dcap;
} FA_NAME(tiles_);

static FA_NAME(tiles_) FA_NAME(tiles_alloc_)(const fa_backward_job *job, fa_arena *arena)
{
    size_t bytes = (size_t)(job->block_k * job->ld) * sizeof(FA_T);
    FA_NAME(tiles_) t;
    t.p = fa_arena_alloc(arena, bytes);
    t.ds = fa_arena_alloc(arena, bytes);
    t.dcap = job->problem->softcap > 0 ? fa_arena_alloc(arena, bytes) : NULL;
    return t;
}

/* The key and value rows of a run of keys as the kernels read them: where the caller keeps them,
 * or widened from half precision into the arena tiles k_tile and v_tile (block_k rows each). */
typedef struct {
    FA_T *k_tile, *v_tile;
    const FA_T *k, *v;
    int64_t k_stride, v_stride;
} FA_NAME(kv_rows_);

static FA_NAME(kv_rows_) FA_NAME(kv_rows_alloc_)(const fa_backward_job *job, fa_arena *arena)
{
    const fa_problem *p = job->problem;
    FA_NAME(kv_rows_) kv = {NULL, NULL, NULL, NULL, 0, 0};
    if (fa_dtype_is_half(p->kv_type)) {
        kv.k_tile = fa_arena_alloc(arena, (size_t)(job->block_k * p->dim) * sizeof(FA_T));
        kv.v_tile = fa_arena_alloc(arena, (size_t)(job->block_k * p->dim_v) * sizeof(FA_T));
    }
    return kv;
}

/* Points kv at keys [col0, col0 + cols) of (batch, kv_head), widening them first when they are
 * half precision (cols <= block_k). */
static void FA_NAME(kv_rows_fill_)(const fa_backward_job *job, FA_NAME(kv_rows_) * kv, int64_t batch,
                                   int64_t kv_head, int64_t col0, int64_t cols)
{
    const fa_problem *p = job->problem;
    const size_t elem = fa_elem_size(p->kv_type);
    const void *k = fa_view_at(&p->k, elem, batch, kv_head, col0),
               *v = fa_view_at(&p->v, elem, batch, kv_head, col0);
    if (kv->k_tile) {
        FA_KERN(job)->widen(cols, p->dim, k, p->k.stride_seq, p->kv_type, kv->k_tile, p->dim);
        FA_KERN(job)->widen(cols, p->dim_v, v, p->v.stride_seq, p->kv_type, kv->v_tile, p->dim_v);
        kv->k = kv->k_tile, kv->k_stride = p->dim;
        kv->v = kv->v_tile, kv->v_stride = p->dim_v;
    } else {
        kv->k = k, kv->k_stride = p->k.stride_seq;
        kv->v = v, kv->v_stride = p->v.stride_seq;
    }
}

/* P (into t->p) and dS, the gradient of the scores before any modifier (into t->ds), for the tile
 * of query rows row0.. of (batch, q_head) and keys col0.. */
static void FA_NAME(probs_and_grads_)(const fa_backward_job *job, const FA_NAME(query_pack_) * qp,
                                      int64_t batch, int64_t q_head, int64_t row0, int64_t rows, int64_t col0,
                                      int64_t cols, const FA_T *k, int64_t k_stride, const FA_T *v,
                                      int64_t v_stride, const FA_NAME(tiles_) * t)
{
    const fa_problem *p = job->problem;
    int64_t ld = job->ld;
    int full = fa_tile_fully_visible(p, row0, rows, col0, cols);
    FA_KERN(job)->scores(rows, ld, cols, p->dim, qp->qt, k, k_stride, t->p);
    if (fa_problem_modifies_scores(p)) {
        fa_score_mods mods = fa_score_mods_of(p, sizeof(FA_T), batch, q_head, row0, rows, col0);
        FA_KERN(job)->modify(&mods, ld, cols, t->p, t->dcap);
    }
    if (!full) FA_CAT(fa_epilogue_, FA_SFX)(p, row0, rows, col0, cols, t->p, ld);
    FA_KERN(job)->probabilities(ld, cols, t->p, qp->lse);
    FA_KERN(job)->scores(rows, ld, cols, p->dim_v, qp->dot, v, v_stride, t->ds);
    FA_KERN(job)->score_grad(ld, cols, t->p, t->ds, qp->delta);
    if (!full) FA_CAT(fa_zero_masked_, FA_SFX)(p, row0, rows, col0, cols, t->ds, ld);
    /* through the softcap: ALiBi and bias are constants, their derivative 1 */
    if (t->dcap) FA_KERN(job)->scale_grad(ld, cols, t->ds, t->dcap);
}

/* What an item that owns key blocks works in: the query pack, the tiles, and the dK/dV
 * accumulators of one key block. */
typedef struct {
    FA_NAME(query_pack_) qp;
    FA_NAME(tiles_) tiles;
    FA_NAME(kv_rows_) kv;
    FA_T *dk_acc, *dv_acc;
} FA_NAME(key_scratch_);

/* The accumulators of an item: dK and dV of a key block, or dQ of a query block, carved from one
 * region as large as the larger of the two. Every item of every plan then reaches the same
 * high-water mark, the README's formula, whichever plan the thread count picks. */
static FA_T *FA_NAME(accumulators_alloc_)(const fa_backward_job *job, fa_arena *arena)
{
    const fa_problem *p = job->problem;
    size_t kv =
        fa_arena_tile((size_t)job->block_k, (size_t)fa_round_up(p->dim, FA_PAD_ELEMS), sizeof(FA_T)) +
        fa_arena_tile((size_t)job->block_k, (size_t)fa_round_up(p->dim_v, FA_PAD_ELEMS), sizeof(FA_T));
    size_t q = fa_arena_tile((size_t)job->q_schedule.block_q, (size_t)fa_round_up(p->dim, FA_PAD_ELEMS),
                             sizeof(FA_T));
    return fa_arena_alloc(arena, kv > q ? kv : q);
}

static FA_NAME(key_scratch_) FA_NAME(key_scratch_alloc_)(const fa_backward_job *job, fa_arena *arena)
{
    const fa_problem *p = job->problem;
    int64_t bk = job->block_k;
    FA_NAME(key_scratch_) ks;
    ks.qp = FA_NAME(query_pack_alloc_)(job, arena);
    ks.tiles = FA_NAME(tiles_alloc_)(job, arena);
    ks.kv = FA_NAME(kv_rows_alloc_)(job, arena);
    ks.dk_acc = FA_NAME(accumulators_alloc_)(job, arena);
    ks.dv_acc =
        ks.dk_acc +
        fa_arena_tile((size_t)bk, (size_t)fa_round_up(p->dim, FA_PAD_ELEMS), sizeof(FA_T)) / sizeof(FA_T);
    return ks;
}

/* dK and dV of key block `block` of (batch, kv_head): every query head of the group and every query
 * block that sees the keys, in that fixed order. Each tile's dS·K is also added to the unscaled dQ
 * sums of its query rows, kept in the dq output, under the fused plan (whose item walks the key
 * blocks in order itself) and under the wavefront plan (where the key blocks run on different
 * threads: a tile waits until the previous key block has added to those rows, zeroes them if it is
 * their first key block and scales them if it is their last). Either way these are the same kernel
 * calls on the same tiles as a dQ item's, in the same key order, so the same bits. */
static void FA_NAME(key_block_)(const fa_backward_job *job, FA_NAME(key_scratch_) * ks, int64_t batch,
                                int64_t kv_head, int64_t block, fa_backward_plan plan)
{
    const fa_problem *p = job->problem;
    int64_t bq = job->q_schedule.block_q, bk = job->block_k, ld = job->ld, d = p->dim, dv = p->dim_v;
    int64_t d_pad = fa_round_up(d, FA_PAD_ELEMS), dv_pad = fa_round_up(dv, FA_PAD_ELEMS);
    int64_t block0 = block * bk, block_cols = p->kv_len - block0 < bk ? p->kv_len - block0 : bk;
    for (int64_t x = 0; x < block_cols * d_pad; x++) ks->dk_acc[x] = 0;
    for (int64_t x = 0; x < block_cols * dv_pad; x++) ks->dv_acc[x] = 0;
    FA_NAME(kv_rows_fill_)(job, &ks->kv, batch, kv_head, block0, block_cols); /* widened once per key block */
    for (int64_t g = 0; g < p->group; g++) {
        int64_t q_head = kv_head * p->group + g;
        /* dq is only summed here under the fused and wavefront plans, which half-precision queries
         * never take (fa_backward_run): it is the caller's float rows */
        FA_T *dq = plan == FA_BACKWARD_PLAN_SPLIT
                       ? NULL
                       : (FA_T *)fa_view_at(&p->dq, sizeof(FA_T), batch, q_head, 0);
        for (int64_t row0 = 0; row0 < p->q_len; row0 += bq) {
            int64_t rows = p->q_len - row0 < bq ? p->q_len - row0 : bq;
            fa_key_blocks met = fa_key_blocks_seen(p, row0, rows, bk);
            if (block < met.first || block >= met.end) continue;
            /* only the columns some row of the query block sees: [col0, col0 + cols) */
            fa_key_range seen = fa_tile_cols_seen(p, row0, rows, block0, block_cols);
            int64_t col0 = block0 + seen.begin, cols = seen.end - seen.begin; /* >= 1: the block is met */
            const FA_T *k = ks->kv.k + seen.begin * ks->kv.k_stride,
                       *v = ks->kv.v + seen.begin * ks->kv.v_stride;
            FA_NAME(query_pack_fill_)(job, &ks->qp, batch, q_head, row0, rows);
            FA_NAME(probs_and_grads_)
            (job, &ks->qp, batch, q_head, row0, rows, col0, cols, k, ks->kv.k_stride, v, ks->kv.v_stride,
             &ks->tiles);
            FA_CAT(fa_accumulate_t_visible_, FA_SFX)
            (FA_KERN(job), p, row0, rows, col0, cols, dv, ks->tiles.p, ld, ks->qp.d_o, ks->qp.do_stride,
             ks->dv_acc + seen.begin * dv_pad, dv_pad);
            FA_CAT(fa_accumulate_t_visible_, FA_SFX)
            (FA_KERN(job), p, row0, rows, col0, cols, d, ks->tiles.ds, ld, ks->qp.q, ks->qp.q_stride,
             ks->dk_acc + seen.begin * d_pad, d_pad);
            if (plan == FA_BACKWARD_PLAN_SPLIT) continue;
            atomic_int *added = NULL;
            if (plan == FA_BACKWARD_PLAN_WAVEFRONT) {
                added = fa_backward_dq_progress(job, batch, q_head, row0);
                fa_team_wait_until(added, (int)(block - met.first));
                if (block == met.first) FA_NAME(dq_rows_zero_)(dq, p->dq.stride_seq, row0, rows, d);
            }
            FA_CAT(fa_accumulate_visible_, FA_SFX)
            (FA_KERN(job), p, row0, rows, col0, cols, d, ks->tiles.ds, ld, k, ks->kv.k_stride,
             dq + row0 * p->dq.stride_seq, p->dq.stride_seq);
            if (plan == FA_BACKWARD_PLAN_WAVEFRONT) {
                if (block == met.end - 1)
                    FA_NAME(dq_rows_scale_)(dq, p->dq.stride_seq, row0, rows, d, (FA_T)p->scale);
                atomic_store_explicit(added, (int)(block - met.first + 1), memory_order_release);
            }
        }
    }

    const FA_T scale = (FA_T)p->scale;
    const size_t kv_elem = fa_elem_size(p->kv_type);
    char *dk = fa_view_at(&p->dk, kv_elem, batch, kv_head, block0);
    char *dvo = fa_view_at(&p->dv, kv_elem, batch, kv_head, block0);
    for (int64_t c = 0; c < block_cols; c++) {
        char *dk_row = dk + c * p->dk.stride_seq * (int64_t)kv_elem,
             *dv_row = dvo + c * p->dv.stride_seq * (int64_t)kv_elem;
        if (fa_dtype_is_half(p->kv_type)) { /* rounded once, from the float sums */
            for (int64_t x = 0; x < d; x++)
                fa_half_store(p->kv_type, dk_row, x, (float)(scale * ks->dk_acc[c * d_pad + x]));
            for (int64_t y = 0; y < dv; y++)
                fa_half_store(p->kv_type, dv_row, y, (float)ks->dv_acc[c * dv_pad + y]);
            continue;
        }
        for (int64_t x = 0; x < d; x++) ((FA_T *)(void *)dk_row)[x] = scale * ks->dk_acc[c * d_pad + x];
        for (int64_t y = 0; y < dv; y++) ((FA_T *)(void *)dv_row)[y] = ks->dv_acc[c * dv_pad + y];
    }
}

/* Split and wavefront plans: one key block (with its dQ share under the wavefront plan). */
static void FA_NAME(dkdv_item_)(const fa_backward_job *job, fa_arena *arena, int64_t index)
{
    const fa_problem *p = job->problem;
    int64_t block = index % job->kv_blocks, bh = index / job->kv_blocks;
    FA_NAME(key_scratch_) ks = FA_NAME(key_scratch_alloc_)(job, arena);
    FA_NAME(key_block_)(job, &ks, bh / p->kv_heads, bh % p->kv_heads, block, job->plan);
}

/* Fused plan: every key block of (batch, kv head), and the dQ of the group's query heads, which
 * no other item touches. dQ is summed where it ends up, in the dq output (zeroed first, scaled
 * last), so the scratch stays that of one key block. */
static void FA_NAME(head_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_backward_job *job = job_ptr;
    const fa_problem *p = job->problem;
    int64_t batch = index / p->kv_heads, kv_head = index % p->kv_heads, d = p->dim;
    FA_NAME(key_scratch_) ks = FA_NAME(key_scratch_alloc_)(job, arena);
    for (int64_t g = 0; g < p->group; g++) {
        FA_T *dq = (FA_T *)fa_view_at(&p->dq, sizeof(FA_T), batch, kv_head * p->group + g, 0);
        FA_NAME(dq_rows_zero_)(dq, p->dq.stride_seq, 0, p->q_len, d);
    }
    for (int64_t block = 0; block < job->kv_blocks; block++)
        FA_NAME(key_block_)(job, &ks, batch, kv_head, block, FA_BACKWARD_PLAN_FUSED);
    for (int64_t g = 0; g < p->group; g++) {
        FA_T *dq = (FA_T *)fa_view_at(&p->dq, sizeof(FA_T), batch, kv_head * p->group + g, 0);
        FA_NAME(dq_rows_scale_)(dq, p->dq.stride_seq, 0, p->q_len, d, (FA_T)p->scale);
    }
}

/* A batch of sequences: the job of sequence b's dense problem `one` (its query schedule, key blocks
 * and delta rows), so its items run exactly as a dense call of that sequence alone would. */
static void FA_NAME(sequence_job_)(const fa_backward_job *job, int64_t b, fa_problem *one,
                                   fa_backward_job *mine)
{
    fa_problem_sequence(job->problem, b, one);
    *mine = *job;
    mine->problem = one;
    mine->q_schedule = fa_q_schedule_make(one, job->q_schedule.block_q);
    mine->kv_blocks = (one->kv_len + job->block_k - 1) / job->block_k;
    mine->kv_items = one->kv_heads * mine->kv_blocks;
    mine->delta = (char *)job->delta + ((const char *)one->lse - (const char *)job->problem->lse);
}

static void FA_NAME(delta_sequence_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_backward_job *job = job_ptr;
    int64_t b = fa_sequence_of_item(job->first_item, job->problem->batch, index);
    fa_problem one;
    fa_backward_job mine;
    FA_NAME(sequence_job_)(job, b, &one, &mine);
    FA_NAME(delta_item_)(&mine, arena, index - job->first_item[b]);
}

/* Fused plan per sequence: item (b, kv head) of b·Hkv + kv head. */
static void FA_NAME(head_sequence_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_backward_job *job = job_ptr;
    int64_t b = index / job->problem->kv_heads;
    fa_problem one;
    fa_backward_job mine;
    FA_NAME(sequence_job_)(job, b, &one, &mine);
    FA_NAME(head_item_)(&mine, arena, index % job->problem->kv_heads);
}

/* Split plan per sequence (half-precision queries, whose dQ must be summed in float in the arena):
 * phase item g of sequence b = fa_sequence_of_item(first_grad, ...) is its own problem's split
 * item g - first_grad[b]: dK/dV items, then dQ items, as a dense call of it alone numbers them. */
static void FA_NAME(grad_item_)(const void *job_ptr, fa_arena *arena, int64_t index);

static void FA_NAME(grad_sequence_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_backward_job *job = job_ptr;
    int64_t b = fa_sequence_of_item(job->first_grad, job->problem->batch, index);
    fa_problem one;
    fa_backward_job mine;
    FA_NAME(sequence_job_)(job, b, &one, &mine);
    FA_NAME(grad_item_)(&mine, arena, index - job->first_grad[b]);
}

/* Split plan: one query block's dQ, every key block in order. */
static void FA_NAME(dq_item_)(const fa_backward_job *job, fa_arena *arena, int64_t index)
{
    const fa_problem *p = job->problem;
    fa_q_item it = fa_q_schedule_item(&job->q_schedule, p, index);
    int64_t bk = job->block_k, ld = job->ld, d = p->dim;
    int64_t d_pad = fa_round_up(d, FA_PAD_ELEMS);
    int64_t kv_head = it.q_head / p->group;

    FA_NAME(query_pack_) qp = FA_NAME(query_pack_alloc_)(job, arena);
    FA_NAME(tiles_) tiles = FA_NAME(tiles_alloc_)(job, arena);
    FA_NAME(kv_rows_) kv = FA_NAME(kv_rows_alloc_)(job, arena);
    FA_T *dq_acc = FA_NAME(accumulators_alloc_)(job, arena);
    for (int64_t x = 0; x < it.rows * d_pad; x++) dq_acc[x] = 0;
    FA_NAME(query_pack_fill_)(job, &qp, it.batch, it.q_head, it.row0, it.rows);

    fa_key_blocks met = fa_key_blocks_seen(p, it.row0, it.rows, bk);
    for (int64_t block0 = met.first * bk; block0 < met.end * bk; block0 += bk) {
        fa_key_range seen =
            fa_tile_cols_seen(p, it.row0, it.rows, block0, p->kv_len - block0 < bk ? p->kv_len - block0 : bk);
        int64_t col0 = block0 + seen.begin, cols = seen.end - seen.begin;
        if (cols == 0) continue;
        FA_NAME(kv_rows_fill_)(job, &kv, it.batch, kv_head, col0, cols);
        FA_NAME(probs_and_grads_)
        (job, &qp, it.batch, it.q_head, it.row0, it.rows, col0, cols, kv.k, kv.k_stride, kv.v, kv.v_stride,
         &tiles);
        FA_CAT(fa_accumulate_visible_, FA_SFX)
        (FA_KERN(job), p, it.row0, it.rows, col0, cols, d, tiles.ds, ld, kv.k, kv.k_stride, dq_acc, d_pad);
    }

    const FA_T scale = (FA_T)p->scale;
    const size_t q_elem = fa_elem_size(p->q_type);
    char *dq = fa_view_at(&p->dq, q_elem, it.batch, it.q_head, it.row0);
    for (int64_t r = 0; r < it.rows; r++) {
        char *row = dq + r * p->dq.stride_seq * (int64_t)q_elem;
        if (fa_dtype_is_half(p->q_type)) /* rounded once, from the float sums */
            for (int64_t x = 0; x < d; x++)
                fa_half_store(p->q_type, row, x, (float)(scale * dq_acc[r * d_pad + x]));
        else
            for (int64_t x = 0; x < d; x++) ((FA_T *)(void *)row)[x] = scale * dq_acc[r * d_pad + x];
    }
}

#if FA_PAIRS_PATH
#include "drivers/backward_pairs.h"
#endif

/* The split plan's second phase: all dK/dV items first (each walks a whole column of query blocks,
 * so they are the long ones), then the dQ items. */
static void FA_NAME(grad_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_backward_job *job = job_ptr;
#if FA_PAIRS_PATH
    if (job->pairs) {
        pairs_grad_item_(job, arena, index);
        return;
    }
#endif
    if (index < job->kv_items)
        FA_NAME(dkdv_item_)(job, arena, index);
    else
        FA_NAME(dq_item_)(job, arena, index - job->kv_items);
}

#undef FA_KERN
