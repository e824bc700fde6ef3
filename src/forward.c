/* SPDX-License-Identifier: BSD-3-Clause */
/* Forward pass: cut the problem into query-block items and run them on the team. */
#include "forward.h"

#include <math.h>

#include "arena.h"
#include "epilogue.h"
#include "pack.h"
#include "schedule.h"
#include "team.h"
#include "visible_products.h"

typedef struct {
    const fa_problem *problem;
    const fa_kernels *kernels;
    fa_q_schedule schedule;
    int64_t block_k;
    int64_t ld;            /* block_q rounded up to the padding unit: the row stride of transposed tiles */
    fa_kv_split split;     /* splits == 1: one item per query block */
    void *partials;        /* split-KV partial states (in the context's row buffer) */
    int64_t partial_elems; /* elements of one (query item, chunk) partial state */
    const int64_t *first_item; /* a batch of sequences: sequence b's first item (batch + 1 entries) */
} fa_forward_job;

#define FA_T         float
#define FA_SFX       f32
#define FA_LOG       logf
#define FA_EXP       expf
#define FA_PAD_ELEMS FA_PAD_ELEMS_F32
#include "forward_item.h"
#undef FA_T
#undef FA_SFX
#undef FA_LOG
#undef FA_EXP
#undef FA_PAD_ELEMS

#define FA_T         double
#define FA_SFX       f64
#define FA_LOG       log
#define FA_EXP       exp
#define FA_PAD_ELEMS FA_PAD_ELEMS_F64
#include "forward_item.h"
#undef FA_T
#undef FA_SFX
#undef FA_LOG
#undef FA_EXP
#undef FA_PAD_ELEMS

static int64_t pad_elems_of(size_t elem)
{
    return elem == sizeof(double) ? FA_PAD_ELEMS_F64 : FA_PAD_ELEMS_F32;
}

size_t fa_forward_scratch_bytes(int64_t block_q, int64_t block_k, int64_t dim, int64_t dim_v, size_t elem)
{
    int64_t pad = pad_elems_of(elem);
    size_t ld = (size_t)fa_round_up(block_q, pad), dv_pad = (size_t)fa_round_up(dim_v, pad);
    size_t bq = (size_t)block_q, bk = (size_t)block_k, d = (size_t)dim;
    size_t queries = fa_arena_tile(d, ld, elem), scores = fa_arena_tile(bk, ld, elem);
    size_t accumulator = fa_arena_tile(bq, dv_pad, elem), row_stats = 2 * fa_arena_tile(1, ld, elem);
    return fa_size_add(fa_size_add(queries, scores), fa_size_add(accumulator, row_stats));
}

/* A batch of sequences: one item per (sequence, head, query block) of each sequence's own problem,
 * with the block sizes of its longest sequence, so that a sequence computes exactly as a dense call
 * of it alone with those block sizes would. No split-KV here (yet): the items of many sequences feed
 * the threads. Paged keys are copied tile by tile into two more arena tiles. */
static fa_status forward_sequences(fa_context *ctx, const fa_problem *p)
{
    size_t elem = p->dtype == FA_F64 ? sizeof(double) : sizeof(float);
    int64_t pad = pad_elems_of(elem);
    fa_problem widest = *p, one;
    widest.q_len = widest.kv_len = 0;
    for (int64_t b = 0; b < p->batch; b++) {
        fa_problem_sequence(p, b, &one);
        if (one.q_len > widest.q_len) widest.q_len = one.q_len;
        if (one.kv_len > widest.kv_len) widest.kv_len = one.kv_len;
    }
    int64_t block_q, block_k;
    fa_context_blocks(ctx, &widest, elem, 512, &block_q, &block_k);
    if (fa_context_reserve_rows(ctx, (size_t)(p->batch + 1) * sizeof(int64_t)) != 0) return FA_ERR_NOMEM;
    int64_t *first = ctx->rows;
    first[0] = 0;
    for (int64_t b = 0; b < p->batch; b++) {
        fa_problem_sequence(p, b, &one);
        first[b + 1] = first[b] + fa_q_schedule_make(&one, block_q).count;
    }
    fa_forward_job job = {p,
                          ctx->kernels,
                          fa_q_schedule_make(&widest, block_q),
                          block_k,
                          fa_round_up(block_q, pad),
                          {1, 0},
                          NULL,
                          0,
                          first};
    size_t scratch = fa_forward_scratch_bytes(block_q, block_k, p->dim, p->dim_v, elem);
    if (p->seqs->block_table)
        scratch = fa_size_add(scratch, fa_size_add(fa_arena_tile((size_t)block_k, (size_t)p->dim, elem),
                                                   fa_arena_tile((size_t)block_k, (size_t)p->dim_v, elem)));
    fa_team_work work = {
        .scratch_bytes = scratch,
        .job = &job,
        .phases = 1,
        .phase = {{first[p->batch],
                   p->dtype == FA_F64 ? forward_sequence_item_f64 : forward_sequence_item_f32}},
    };
    fa_status st = fa_team_run(ctx, &work);
    if (st == FA_OK) {
        ctx->last_block_q = (int)block_q;
        ctx->last_block_k = (int)block_k;
    }
    return st;
}

fa_status fa_forward_run(fa_context *ctx, const fa_problem *p)
{
    /* Items exist for f32 and f64 only, and the epilogue knows a fixed set of masks: validate.c lets
     * nothing else through. Should it come, it is refused here, with nothing written, rather than
     * run as f32 or unmasked. */
    if (p->dtype != FA_F32 && p->dtype != FA_F64) return FA_ERR_UNSUPPORTED;
    if (!fa_epilogue_knows(p)) return FA_ERR_ARG;
    if (p->seqs) return forward_sequences(ctx, p);
    size_t elem = p->dtype == FA_F64 ? sizeof(double) : sizeof(float);
    int64_t pad = pad_elems_of(elem);
    int64_t block_q, block_k;
    fa_context_blocks(ctx, p, elem, 512, &block_q, &block_k);

    fa_forward_job job = {p,
                          ctx->kernels,
                          fa_q_schedule_make(p, block_q),
                          block_k,
                          fa_round_up(block_q, pad),
                          {1, p->kv_len},
                          NULL,
                          0,
                          NULL};
    job.partial_elems = 2 * job.ld + block_q * fa_round_up(p->dim_v, pad);
    /* a row's share of a partial, rounded up: the partials then stay within schedule.c's cap */
    size_t partial_row_bytes = ((size_t)job.partial_elems * elem + (size_t)block_q - 1) / (size_t)block_q;
    job.split = fa_kv_split_make(p, &job.schedule, block_k, partial_row_bytes);
    int f64 = p->dtype == FA_F64;
    fa_team_work work = {
        .scratch_bytes = fa_forward_scratch_bytes(block_q, block_k, p->dim, p->dim_v, elem),
        .job = &job,
        .phases = 1,
        .phase = {{job.schedule.count, f64 ? forward_item_f64 : forward_item_f32}},
    };
    if (job.split.splits > 1) {
        size_t bytes = (size_t)(job.schedule.count * job.split.splits * job.partial_elems) * elem;
        if (fa_context_reserve_rows(ctx, bytes) != 0) return FA_ERR_NOMEM;
        job.partials = ctx->rows;
        work.phases = 2;
        work.phase[0] = (fa_team_phase){job.schedule.count * job.split.splits,
                                        f64 ? forward_chunk_item_f64 : forward_chunk_item_f32};
        work.phase[1] =
            (fa_team_phase){job.schedule.count, f64 ? forward_merge_item_f64 : forward_merge_item_f32};
    }
    fa_status st = fa_team_run(ctx, &work);
    if (st == FA_OK) { /* the statistics describe the last call that succeeded */
        ctx->last_block_q = (int)block_q;
        ctx->last_block_k = (int)block_k;
    }
    return st;
}
