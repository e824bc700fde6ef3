/* SPDX-License-Identifier: BSD-3-Clause */
/* The backward's work items, written once for both accumulation types: included by backward.c with
 * FA_T, FA_SFX (f32/f64: also the kernel-table member), FA_EXP (exp of FA_T), FA_PAD_ELEMS (the
 * padding unit of accumulator rows, kernels.h) and FA_DOT_UNITS (1 for float: the set of bf16
 * dot-product units, backward_dot.h) defined. The tiles themselves are backward_grads.h,
 * instantiated once per set of tile products; here are the items of the three plans over them.
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
 * depends on the team. The fused and wavefront plans sum dQ in the caller's dq rows where those
 * are float, and else (a half-precision dq, rounded once; the dot set, whose sums are transposed)
 * in a buffer the context keeps of one dQ item's accumulator per query block. */

#include "template.h"

/* The dq rows [row0, row0 + rows) of one head (row stride `stride`), where the fused and wavefront
 * plans sum a float dq: every plan starts a query block's dQ sums at +0 and ends them multiplied by
 * the scale, as a dQ item does with its accumulator. */
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

/* The dq rows [row0, row0 + rows) of (batch, q_head) of a query block that sees no key: scale·(+0), in
 * dq's type, as a dQ item stores its zeroed sums. */
static void FA_NAME(dq_rows_of_nothing_)(const fa_backward_job *job, int64_t batch, int64_t q_head,
                                         int64_t row0, int64_t rows)
{
    const fa_problem *p = job->problem;
    const FA_T zero = (FA_T)p->scale * 0;
    const size_t dq_elem = fa_elem_size(p->dq_type);
    char *dq = fa_view_at(&p->dq, dq_elem, batch, q_head, row0);
    const int rounds = fa_dq_rounds(p);
    for (int64_t r = 0; r < rows; r++) {
        char *row = dq + r * p->dq.stride_seq * (int64_t)dq_elem;
        for (int64_t x = 0; x < p->dim; x++)
            if (rounds)
                fa_half_store(p->dq_type, row, x, (float)zero);
            else
                ((FA_T *)(void *)row)[x] = zero;
    }
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

/* Writes (add = 0) or adds (add = 1) the rows [0, rows) and keys [0, cols) of a key-major dS tile
 * into dbias (row 0's first element at `at`, rows `stride` elements apart; 0 when dbias sums the
 * rows, which then add in row order). */
static void FA_NAME(dbias_store_)(const FA_T *ds, int64_t ld, int64_t rows, int64_t cols, FA_T *at,
                                  int64_t stride, int add)
{
    if (add) { /* each element adds its rows in order */
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) at[r * stride + c] += ds[c * ld + r];
        return;
    }
    /* a transpose in blocks of 16 rows: the tile's lines are read whole, each row written in order */
    for (int64_t r0 = 0; r0 < rows; r0 += 16) {
        const int64_t r1 = r0 + 16 < rows ? r0 + 16 : rows;
        for (int64_t c0 = 0; c0 < cols; c0 += 16) {
            const int64_t c1 = c0 + 16 < cols ? c0 + 16 : cols;
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = c0; c < c1; c++) at[r * stride + c] = ds[c * ld + r];
        }
    }
}

/* Zeroes the rows [0, rows) and keys [0, cols) of dbias (row 0's first element at `at`): the keys of a
 * tile that no score reaches. */
static void FA_NAME(dbias_zero_)(FA_T *at, int64_t stride, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) at[r * stride + c] = 0;
}

/* The regions of a delta item: one output row and its dO row widened from half precision. */
static void FA_NAME(delta_carve_)(fa_scratch *sc, const fa_backward_job *job, FA_T **o_wide, FA_T **do_wide)
{
    const fa_problem *p = job->problem;
    *o_wide = *do_wide = NULL;
    if (!fa_q_widens(p)) return;
    *o_wide = fa_scratch_take(sc, 1, (size_t)p->dim_v, sizeof(FA_T));
    *do_wide = fa_scratch_take(sc, 1, (size_t)p->dim_v, sizeof(FA_T));
}

/* delta[row] = sum_y dO[row][y] · O[row][y] for the rows of one query item. */
static void FA_NAME(delta_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_backward_job *job = job_ptr;
    const fa_problem *p = job->problem;
    fa_q_item it = fa_q_schedule_item(&job->q_schedule, p, index);
    const size_t q_elem = fa_elem_size(p->q_type);
    const char *o = (const char *)fa_view_at(&p->out, q_elem, it.batch, it.q_head, 0);
    const char *d_o = (const char *)fa_view_at(&p->dout, q_elem, it.batch, it.q_head, 0);
    FA_T *delta = (FA_T *)job->delta + (it.batch * p->q_heads + it.q_head) * p->lse_head_stride;
    FA_T *o_wide, *do_wide;
    fa_scratch scratch = fa_scratch_carver(arena);
    FA_NAME(delta_carve_)(&scratch, job, &o_wide, &do_wide);
    for (int64_t i = it.row0; i < it.row0 + it.rows; i++) {
        const void *orow = o + i * p->out.stride_seq * (int64_t)q_elem;
        const void *drow = d_o + i * p->dout.stride_seq * (int64_t)q_elem;
        if (o_wide) {
            job->kernels->FA_SFX->widen(1, p->dim_v, orow, 0, p->q_type, NULL, 0, o_wide, 0);
            job->kernels->FA_SFX->widen(1, p->dim_v, drow, 0, p->q_type, NULL, 0, do_wide, 0);
            orow = o_wide, drow = do_wide;
        }
        delta[i] = FA_NAME(dot_)(drow, orow, p->dim_v);
    }
    if (job->plan == FA_BACKWARD_PLAN_SPLIT) return; /* its dQ items write every dq row */
    /* Under the fused and wavefront plans the key blocks' items write dq (add_to_dq_); a query block
     * that meets no key block gets its dq (scale·0, as a dQ item writes it) here, since none will.
     * The wavefront plan's dQ hand-off starts at 0 for every block. */
    if (job->plan == FA_BACKWARD_PLAN_WAVEFRONT)
        atomic_store_explicit(fa_backward_dq_progress(job, it.batch, it.q_head, it.row0), 0,
                              memory_order_relaxed);
    fa_key_blocks met = fa_key_blocks_seen(p, it.row0, it.rows, job->block_k);
    if (met.end == met.first) FA_NAME(dq_rows_of_nothing_)(job, it.batch, it.q_head, it.row0, it.rows);
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

#define FA_SET FA_SFX
#include "drivers/backward_float.h"
#include "drivers/backward_grads.h"
#undef FA_SET

#if FA_DOT_UNITS
#define FA_SET dot
#include "drivers/backward_dot.h"
#include "drivers/backward_grads.h"
#undef FA_SET
#endif

/* The fused plan's item (backward_grads.h, grads_head_) on the set the job takes. */
static void FA_NAME(head_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_backward_job *job = job_ptr;
#if FA_DOT_UNITS
    if (job->dot) {
        grads_head_dot(job, arena, index);
        return;
    }
#endif
    FA_CAT(grads_head_, FA_SFX)(job, arena, index);
}

/* The split plan's items (and the wavefront plan's key blocks) on the set the job takes. */
static void FA_NAME(grad_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_backward_job *job = job_ptr;
#if FA_DOT_UNITS
    if (job->dot) {
        grads_item_dot(job, arena, index);
        return;
    }
#endif
    FA_CAT(grads_item_, FA_SFX)(job, arena, index);
}

/* A summed dbias's items (backward_grads.h, grads_dbias_item_) on the set the job takes. */
static void FA_NAME(dbias_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_backward_job *job = job_ptr;
#if FA_DOT_UNITS
    if (job->dot) {
        grads_dbias_item_dot(job, arena, index);
        return;
    }
#endif
    FA_CAT(grads_dbias_item_, FA_SFX)(job, arena, index);
}

/* The bytes of one query block's dQ sums on the set the job takes. */
static size_t FA_NAME(query_sums_bytes_)(const fa_backward_job *job)
{
#if FA_DOT_UNITS
    if (job->dot) return dq_sums_bytes_dot(job);
#endif
    return FA_CAT(dq_sums_bytes_, FA_SFX)(job);
}

/* The call's scratch plan: the larger carve of its delta items and its gradient items, sized. */
static size_t FA_NAME(backward_plan_)(const fa_backward_job *job)
{
    FA_T *o_wide, *do_wide;
    fa_scratch sizer = fa_scratch_sizer();
    FA_NAME(delta_carve_)(&sizer, job, &o_wide, &do_wide);
#if FA_DOT_UNITS
    if (job->dot) return fa_scratch_max(sizer.bytes, grads_plan_dot(job));
#endif
    return fa_scratch_max(sizer.bytes, FA_CAT(grads_plan_, FA_SFX)(job));
}

/* A batch of sequences: the job of sequence b's dense problem `one` (its query schedule, key blocks,
 * delta rows and dQ sums), so its items run exactly as a dense call of that sequence alone would. */
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
    if (job->dq_sums) mine->dq_sums = (char *)job->dq_sums + (size_t)job->first_item[b] * job->dq_sums_bytes;
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

/* Split plan per sequence (where the dQ sums of the fused plan did not fit in memory):
 * phase item g of sequence b = fa_sequence_of_item(first_grad, ...) is its own problem's split
 * item g - first_grad[b]: dK/dV items, then dQ items, as a dense call of it alone numbers them. */
static void FA_NAME(grad_sequence_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_backward_job *job = job_ptr;
    int64_t b = fa_sequence_of_item(job->first_grad, job->problem->batch, index);
    fa_problem one;
    fa_backward_job mine;
    FA_NAME(sequence_job_)(job, b, &one, &mine);
    FA_NAME(grad_item_)(&mine, arena, index - job->first_grad[b]);
}
