/* SPDX-License-Identifier: BSD-3-Clause */
/* Backward pass: delta = rowsum(dO ∘ O) once, then the items of one plan (backward.h), all
 * independent. */
#include "drivers/backward.h"

#include <math.h>
#include <stdatomic.h>

#include "drivers/dropout.h"
#include "drivers/epilogue.h"
#include "drivers/half_rows.h"
#include "drivers/visible_products.h"
#include "plan/block_sizes.h"
#include "plan/mask.h"
#include "plan/schedule.h"
#include "plan/scratch.h"
#include "runtime/arena.h"
#include "runtime/team.h"

typedef struct {
    const fa_problem *problem;
    const fa_kernels *kernels;
    fa_q_schedule q_schedule; /* the delta and dQ items: (batch, q head, query block) */
    int64_t block_k;
    int64_t kv_blocks;         /* key blocks per (batch, kv head) */
    int64_t kv_items;          /* batch · kv_heads · kv_blocks dK/dV items */
    int64_t ld;                /* block_q rounded up to the padding unit: row stride of transposed tiles */
    void *delta;               /* [batch][q_heads][q_len] of the accumulation type */
    fa_backward_plan plan;     /* resolved: FUSED, SPLIT or WAVEFRONT */
    atomic_int *dq_progress;   /* wavefront: [batch][q_heads][q_blocks] key blocks added to dq so far */
    const int64_t *first_item; /* a batch of sequences: sequence b's first delta item (batch + 1 entries) */
    const int64_t *first_grad; /* ... and its first split-plan item (the split plan only) */
    int dot;                   /* 1: all-bf16 on the table's bf16 dot-product set (backward_dot.h) */
    /* The fused and wavefront plans' dQ sums where they are not the caller's float dq rows: one dQ
     * item's accumulator (dq_sums_bytes) per query block, [batch][q_heads][q_blocks]; else NULL. */
    void *dq_sums;
    size_t dq_sums_bytes;
} fa_backward_job;

/* Whether a backward's items run on the table's bf16 dot-product units: every tensor bf16, a table
 * with a bf16 set, even head dims (the products of S and dP run over D and Dv in pairs), no dropout
 * (its forward widens, as forward.c says why, and the backward recomputes that forward's P). */
static int takes_dot(const fa_context *ctx, const fa_problem *p)
{
    return ctx->kernels->bf16 && p->q_type == FA_BF16 && p->kv_type == FA_BF16 && p->dim % 2 == 0 &&
           p->dim_v % 2 == 0 && p->dropout_p == 0.0;
}

/* The index of query block row0 / block_q of (batch, q_head) among [batch][q_heads][q_blocks]. */
static int64_t fa_backward_q_block(const fa_backward_job *job, int64_t batch, int64_t q_head, int64_t row0)
{
    const fa_problem *p = job->problem;
    return (batch * p->q_heads + q_head) * job->q_schedule.q_blocks + row0 / job->q_schedule.block_q;
}

/* The wavefront plan's counter of that query block. */
static atomic_int *fa_backward_dq_progress(const fa_backward_job *job, int64_t batch, int64_t q_head,
                                           int64_t row0)
{
    return job->dq_progress + fa_backward_q_block(job, batch, q_head, row0);
}

/* Its tile of dQ sums under the fused and wavefront plans (job->dq_sums set). */
static void *fa_backward_dq_sums(const fa_backward_job *job, int64_t batch, int64_t q_head, int64_t row0)
{
    return (char *)job->dq_sums + (size_t)fa_backward_q_block(job, batch, q_head, row0) * job->dq_sums_bytes;
}

#define FA_T         float
#define FA_SFX       f32
#define FA_EXP       expf
#define FA_PAD_ELEMS FA_PAD_ELEMS_F32
#define FA_DOT_UNITS 1
#include "drivers/backward_items.h"
#undef FA_DOT_UNITS
#undef FA_T
#undef FA_SFX
#undef FA_EXP
#undef FA_PAD_ELEMS

#define FA_T         double
#define FA_SFX       f64
#define FA_EXP       exp
#define FA_PAD_ELEMS FA_PAD_ELEMS_F64
#define FA_DOT_UNITS 0
#include "drivers/backward_items.h"
#undef FA_DOT_UNITS
#undef FA_T
#undef FA_SFX
#undef FA_EXP
#undef FA_PAD_ELEMS

/* The call's scratch plan (backward_items.h, backward_plan_): every thread reserves it. */
static size_t backward_plan(const fa_backward_job *job)
{
    return job->problem->dtype == FA_F64 ? backward_plan_f64(job) : backward_plan_f32(job);
}

/* The bytes of one query block's dQ sums (backward_items.h, query_sums_bytes_). */
static size_t query_sums_bytes(const fa_backward_job *job)
{
    return job->problem->dtype == FA_F64 ? query_sums_bytes_f64(job) : query_sums_bytes_f32(job);
}

/* The rows-buffer bytes of the dQ sums of `blocks` query blocks (and 64 to align them) where the
 * job's fused or wavefront plan cannot sum dQ in the caller's rows (a half dq; the dot set's
 * transposed sums), setting job->dq_sums_bytes; else 0. */
static size_t dq_sums_reserve(fa_backward_job *job, int64_t blocks)
{
    if (job->plan == FA_BACKWARD_PLAN_SPLIT || !(job->dot || fa_dq_rounds(job->problem))) return 0;
    job->dq_sums_bytes = query_sums_bytes(job);
    return fa_size_add(fa_size_mul3((size_t)blocks, job->dq_sums_bytes, 1), 64);
}

/* Where the sums start in the rows buffer: past its first `offset` bytes, on a 64-byte boundary. */
static void *dq_sums_at(void *rows, size_t offset)
{
    return (void *)(((uintptr_t)rows + offset + 63) & ~(uintptr_t)63);
}

/* The fused plan runs whole heads, B·Hkv of them: with `rounds` of them per thread, threads sit
 * idle for rounds·threads - heads head-times. The wavefront plan does the same work in key-block
 * items and keeps every thread busy (its pipeline fills in a few tiles), but its threads wait by
 * spinning. The split plan never waits but recomputes S, P, dP and dS for dQ: 1.21-1.34x the fused
 * plan's time on one thread (bench/results/2026-11-29-amd-epyc-avx512.md). So: fused when at most a tenth
 * of the team's
 * time would idle, else wavefront when every thread has a core, else the cheaper of fused and
 * split. */
#define FUSED_IDLE_OK 1.1
#define SPLIT_COST    1.3

fa_backward_plan fa_backward_plan_for(int64_t head_items, int threads, int cores)
{
    if (threads < 1) threads = 1;
    if (head_items < 1) return FA_BACKWARD_PLAN_FUSED;
    double idle = (double)((head_items + threads - 1) / threads * threads) / (double)head_items;
    if (idle <= FUSED_IDLE_OK) return FA_BACKWARD_PLAN_FUSED;
    if (threads <= cores) return FA_BACKWARD_PLAN_WAVEFRONT;
    return idle <= SPLIT_COST ? FA_BACKWARD_PLAN_FUSED : FA_BACKWARD_PLAN_SPLIT;
}

void fa_backward_force_plan(fa_context *ctx, fa_backward_plan plan)
{
    ctx->backward_plan = plan;
}

const char *fa_backward_plan_name(fa_backward_plan plan)
{
    switch (plan) {
    case FA_BACKWARD_PLAN_FUSED: return "fused";
    case FA_BACKWARD_PLAN_WAVEFRONT: return "wavefront";
    case FA_BACKWARD_PLAN_SPLIT: return "split";
    default: return "auto";
    }
}

/* The job of a backward over p with these blocks and plan, its query items those of `scheduled` (p, or
 * a batch's longest sequence); its key-block counts and rows (delta, counters, sums) are set later. */
static fa_backward_job backward_job(const fa_context *ctx, const fa_problem *p, const fa_problem *scheduled,
                                    int64_t block_q, int64_t block_k, fa_backward_plan plan)
{
    const int64_t pad = p->dtype == FA_F64 ? FA_PAD_ELEMS_F64 : FA_PAD_ELEMS_F32;
    fa_backward_job job = {.problem = p,
                           .kernels = ctx->kernels,
                           .q_schedule = fa_q_schedule_make(scheduled, block_q),
                           .block_k = block_k,
                           .ld = fa_round_up(block_q, pad),
                           .plan = plan,
                           .dot = takes_dot(ctx, p)};
    return job;
}

/* A batch of sequences: every sequence runs the fused plan on its own dense problem (delta items,
 * then one item per (sequence, kv head)), with the block sizes of the longest sequence, so each
 * sequence's gradients are those of a dense call of it alone; the split plan only where the dQ sums
 * (fa_backward_run) do not fit in memory. Not paged (validate.c refuses it). */
static fa_status backward_sequences(fa_context *ctx, const fa_problem *p)
{
    size_t elem = p->dtype == FA_F64 ? sizeof(double) : sizeof(float);
    fa_problem widest = *p, one;
    widest.q_len = widest.kv_len = 0;
    for (int64_t b = 0; b < p->batch; b++) {
        fa_problem_sequence(p, b, &one);
        if (one.q_len > widest.q_len) widest.q_len = one.q_len;
        if (one.kv_len > widest.kv_len) widest.kv_len = one.kv_len;
    }
    int64_t block_q, block_k, q_items = 0;
    fa_blocks_for(ctx, &widest, elem, FA_PASS_BACKWARD, 0, &block_q, &block_k);
    for (int64_t b = 0; b < p->batch; b++) {
        fa_problem_sequence(p, b, &one);
        q_items += fa_q_schedule_make(&one, block_q).count;
    }
    fa_backward_job job = backward_job(ctx, p, &widest, block_q, block_k, FA_BACKWARD_PLAN_FUSED);
    /* the rows buffer: delta, laid out as lse, then the sequences' first delta items and first split
     * items, then (fused, sums apart from dq) the dQ sums, sequence b's from its first delta item on */
    int64_t lse_elems = (p->seqs->cu_seqlens_q ? 1 : p->batch) * p->q_heads * p->lse_head_stride;
    size_t delta_bytes = fa_arena_tile((size_t)lse_elems, 1, elem),
           firsts_bytes = 2 * (size_t)(p->batch + 1) * sizeof(int64_t),
           sums_bytes = dq_sums_reserve(&job, q_items);
    if (fa_context_reserve_rows(ctx, fa_size_add(delta_bytes + firsts_bytes, sums_bytes)) != 0) {
        if (sums_bytes == 0 || fa_context_reserve_rows(ctx, delta_bytes + firsts_bytes) != 0)
            return FA_ERR_NOMEM;
        job.plan = FA_BACKWARD_PLAN_SPLIT, sums_bytes = 0;
    }
    job.delta = ctx->rows;
    int64_t *first = (int64_t *)(void *)((char *)ctx->rows + delta_bytes), *first_grad = first + p->batch + 1;
    job.first_item = first, job.first_grad = first_grad;
    if (sums_bytes) job.dq_sums = dq_sums_at(ctx->rows, delta_bytes + firsts_bytes);
    first[0] = first_grad[0] = 0;
    for (int64_t b = 0; b < p->batch; b++) {
        fa_problem_sequence(p, b, &one);
        int64_t items = fa_q_schedule_make(&one, block_q).count;
        first[b + 1] = first[b] + items;
        first_grad[b + 1] = first_grad[b] + items + one.kv_heads * ((one.kv_len + block_k - 1) / block_k);
    }
    const int split = job.plan == FA_BACKWARD_PLAN_SPLIT;
    int f64 = p->dtype == FA_F64;
    fa_team_work work = {
        .scratch_bytes = backward_plan(&job),
        .job = &job,
        .phases = 2,
        .phase = {{first[p->batch], f64 ? delta_sequence_item_f64 : delta_sequence_item_f32},
                  {p->batch * p->kv_heads, f64 ? head_sequence_item_f64 : head_sequence_item_f32}},
    };
    if (split)
        work.phase[1] =
            (fa_team_phase){first_grad[p->batch], f64 ? grad_sequence_item_f64 : grad_sequence_item_f32};
    if (p->dsinks)
        work.phase[work.phases++] =
            (fa_team_phase){p->q_heads, f64 ? sink_grad_item_f64 : sink_grad_item_f32};
    fa_status st = fa_team_run(ctx, &work);
    if (st == FA_OK) {
        ctx->last_block_q = (int)block_q;
        ctx->last_block_k = (int)block_k;
        ctx->last_backward_plan = fa_backward_plan_name(job.plan);
    }
    return st;
}

fa_status fa_backward_run(fa_context *ctx, const fa_problem *p)
{
    /* Items exist for f32 and f64 only, and the epilogue knows a fixed set of masks: validate.c lets
     * nothing else through. Should it come, it is refused here, with nothing written, rather than
     * run as f32 or unmasked. */
    if (p->dtype != FA_F32 && p->dtype != FA_F64) return FA_ERR_UNSUPPORTED;
    if (!fa_masks_known(p)) return FA_ERR_ARG;
    if (p->seqs) return backward_sequences(ctx, p);
    size_t elem = p->dtype == FA_F64 ? sizeof(double) : sizeof(float);
    int64_t block_q, block_k;
    fa_blocks_for(ctx, p, elem, FA_PASS_BACKWARD, 0, &block_q, &block_k);

    fa_backward_job job = backward_job(ctx, p, p, block_q, block_k, FA_BACKWARD_PLAN_AUTO);
    job.kv_blocks = (p->kv_len + block_k - 1) / block_k;
    job.kv_items = p->batch * p->kv_heads * job.kv_blocks;
    int f64 = p->dtype == FA_F64;
    int64_t head_items = p->batch * p->kv_heads;
    job.plan = ctx->backward_plan;
    if (job.plan == FA_BACKWARD_PLAN_AUTO)
        job.plan = fa_backward_plan_for(head_items, ctx->num_threads, fa_context_call_cores(ctx));
    /* The fused and wavefront plans sum dQ where it ends up when dq is float and the set's sums are
     * row-major (backward_float.h), else in one dQ item's accumulator per query block, kept in the
     * context: B·Hq·⌈Nq/bq⌉ of them, which the split plan does without. The rows buffer: delta, then
     * (wavefront) one counter per query block, then those sums, 64-byte aligned. Should the sums not
     * fit in memory, the split plan runs (the same bits). */
    size_t delta_bytes = fa_arena_tile((size_t)(p->batch * p->q_heads * p->q_len), 1, elem);
    for (;;) {
        size_t progress_bytes =
            job.plan == FA_BACKWARD_PLAN_WAVEFRONT ? (size_t)job.q_schedule.count * sizeof(atomic_int) : 0;
        size_t sums_bytes = dq_sums_reserve(&job, job.q_schedule.count);
        if (fa_context_reserve_rows(ctx, fa_size_add(delta_bytes + progress_bytes, sums_bytes)) == 0) {
            job.delta = ctx->rows;
            if (progress_bytes) job.dq_progress = (atomic_int *)((char *)ctx->rows + delta_bytes);
            if (sums_bytes) job.dq_sums = dq_sums_at(ctx->rows, delta_bytes + progress_bytes);
            break;
        }
        if (sums_bytes == 0) return FA_ERR_NOMEM;
        job.plan = FA_BACKWARD_PLAN_SPLIT;
    }

    fa_team_work work = {
        .scratch_bytes = backward_plan(&job),
        .job = &job,
        .phases = 2,
        .phase = {{job.q_schedule.count, f64 ? delta_item_f64 : delta_item_f32},
                  {job.kv_items + job.q_schedule.count, f64 ? grad_item_f64 : grad_item_f32}},
    };
    if (job.plan == FA_BACKWARD_PLAN_FUSED)
        work.phase[1] = (fa_team_phase){head_items, f64 ? head_item_f64 : head_item_f32};
    if (job.plan == FA_BACKWARD_PLAN_WAVEFRONT) work.phase[1].items = job.kv_items; /* no dQ items */
    if (p->dsinks) /* one item per query head, after delta */
        work.phase[work.phases++] =
            (fa_team_phase){p->q_heads, f64 ? sink_grad_item_f64 : sink_grad_item_f32};
    if (p->dbias.data && fa_dbias_sums(p)) { /* one item per (dbias batch, dbias head, key block) */
        int64_t dbias_b = p->dbias.stride_batch == 0 ? 1 : p->batch,
                dbias_h = p->dbias.stride_head == 0 ? 1 : p->q_heads;
        work.phase[work.phases++] =
            (fa_team_phase){dbias_b * dbias_h * job.kv_blocks, f64 ? dbias_item_f64 : dbias_item_f32};
    }
    fa_status st = fa_team_run(ctx, &work);
    if (st == FA_OK) { /* the statistics describe the last call that succeeded */
        ctx->last_block_q = (int)block_q;
        ctx->last_block_k = (int)block_k;
        ctx->last_backward_plan = fa_backward_plan_name(job.plan);
    }
    return st;
}
