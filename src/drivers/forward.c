/* SPDX-License-Identifier: BSD-3-Clause */
/* Forward pass: cut the problem into query-block items and run them on the team. */
#include "drivers/forward.h"

#include <math.h>
#include <string.h>

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

/* One sequence of a batch: the key split a dense call of it alone would make, and the offset of its
 * partial results (elements from its wave's partials). A wave is a run of consecutive sequences
 * whose partials fit FA_SPLIT_MAX_PARTIAL_BYTES together; waves run one after another. */
typedef struct {
    fa_kv_split split;
    int64_t partials;
    int starts_wave;
} fa_sequence_plan;

typedef struct {
    const fa_problem *problem;
    const fa_kernels *kernels;
    fa_q_schedule schedule;
    int64_t block_k;
    int64_t ld;            /* block_q rounded up to the padding unit: the row stride of transposed tiles */
    fa_kv_split split;     /* splits == 1: one item per query block */
    void *partials;        /* split-KV partial results (in the context's row buffer) */
    int64_t partial_elems; /* elements of one (query item, chunk) partial result */
    /* A batch of sequences (batch + 1 entries each): sequence b's first phase-0 item (a query
     * item, or a (query item, chunk) item when it splits) and its first merge item. */
    const int64_t *first_item, *first_merge;
    const fa_sequence_plan *plans;
    int64_t wave_item0, wave_merge0; /* the global numbers of the running wave's first items */
    int dot;                         /* 1: all-bf16 on the table's bf16 dot-product set (forward_dot.h) */
    int paged;                       /* the keys are paged (the sequences' pools): staged tile by tile */
    int group;                       /* query items a phase-0 item groups (forward_group_of); 1: none */
    int gather_q;                    /* items gather their query rows (rows_gathered; forward_float.h) */
    int in_place;                    /* items read their keys in place (reads_in_place; forward_float.h) */
} fa_forward_job;

/* Whether a problem's query rows are not evenly apart within an item: a grouped problem's rows over
 * several positions, which the items gather one by one before packing them. */
static int rows_gathered(const fa_problem *p)
{
    return p->row_group > 1 && p->q_len > p->row_group;
}

/* Whether a problem's items read their keys and values where they lie, by row lists
 * (forward_float.h): a decode step (at most FA_HALF_ROWS query rows, so one query block an item) in
 * f32, the type of the tables' scores_stored and accumulate_stored, over a cache stored in another
 * type or paged. Otherwise such keys are staged in tiles (kv_tiles.h). */
static int reads_in_place(const fa_problem *p)
{
    return p->dtype == FA_F32 && p->q_len <= FA_HALF_ROWS && (fa_kv_widens(p) || p->pages != NULL);
}

/* How many query items of a problem one item groups (forward_attend.h, attend_group_): a decode
 * step's (one query block a head, at most FA_HALF_ROWS rows) heads of one batch entry, up to
 * FA_GROUP_ITEMS; 1 (no group) otherwise. From the shape alone: every item computes what it computes
 * alone, so the grouping changes the memory traffic, never a bit. */
static int forward_group_of(const fa_problem *p, const fa_q_schedule *s, int dot)
{
    if (dot || s->q_blocks != 1 || p->q_len > FA_HALF_ROWS || p->q_heads < 2) return 1;
    return p->q_heads < FA_GROUP_ITEMS ? (int)p->q_heads : FA_GROUP_ITEMS;
}

/* The units a job's phase 0 cuts into key chunks: its query items, or their groups. */
static int64_t forward_units(const fa_problem *p, const fa_q_schedule *s, int group)
{
    if (group <= 1) return s->count;
    return p->batch * ((p->q_heads + group - 1) / group);
}

/* Whether a problem's items run on the table's bf16 dot-product units: every tensor bf16, a table
 * with a bf16 set, an even head dim (the sets multiply pairs of dims; an odd D widens, as every half
 * call does on a table without one), and more than FA_HALF_ROWS query rows a head: a decode step's
 * one row would fill a sixteenth of a tile, where the float kernels read its half cache directly
 * (forward_float.h, scores_half). A batch of sequences decides per sequence (sequence_job_), as a
 * dense call of each would. */
static int rows_take_dot(const fa_problem *p)
{
    /* the dot set packs a block's rows at one stride: not a grouped problem's rows over positions */
    /* dropout's mask multiplies P between the softmax and P·V, which the dot set fuses (it rounds P
     * to bf16 pairs as it computes it): a dropout forward widens */
    return p->q_len > FA_HALF_ROWS && (p->row_group <= 1 || p->q_len <= p->row_group) && p->dropout_p == 0.0;
}

static int takes_dot(const fa_context *ctx, const fa_problem *p)
{
    return ctx->kernels->bf16 && p->q_type == FA_BF16 && p->kv_type == FA_BF16 && p->dim % 2 == 0 &&
           rows_take_dot(p);
}

/* The problem the forward runs for sequence b: its dense problem, with a GQA decode step's query
 * heads grouped as rows (fa_problem_group_rows), exactly as fa_forward_run treats a dense call.
 * Returns the sequence's own query rows (per head). */
static int64_t forward_problem_of_sequence(const fa_problem *p, int64_t b, fa_problem *one)
{
    fa_problem dense;
    fa_problem_sequence(p, b, &dense);
    if (!fa_problem_group_rows(&dense, one)) *one = dense;
    return dense.q_len;
}

/* fa_stats.block_q counts the query rows of one head an item covers: with grouped heads (a GQA
 * decode step) an item covers one row of each head of the group, so at most the call's Nq (a call
 * without queries reports its block as it is). */
static int stats_block_q(int64_t block_q, int64_t rows_per_head)
{
    return (int)(rows_per_head > 0 && rows_per_head < block_q ? rows_per_head : block_q);
}

#define FA_T           float
#define FA_SFX         f32
#define FA_LOG         logf
#define FA_EXP         expf
#define FA_PAD_ELEMS   FA_PAD_ELEMS_F32
#define FA_DOT_UNITS   1
#include "drivers/forward_item.h"
#undef FA_DOT_UNITS
#undef FA_T
#undef FA_SFX
#undef FA_LOG
#undef FA_EXP
#undef FA_PAD_ELEMS

#define FA_T           double
#define FA_SFX         f64
#define FA_LOG         log
#define FA_EXP         exp
#define FA_PAD_ELEMS   FA_PAD_ELEMS_F64
#define FA_DOT_UNITS   0
#include "drivers/forward_item.h"
#undef FA_DOT_UNITS
#undef FA_T
#undef FA_SFX
#undef FA_LOG
#undef FA_EXP
#undef FA_PAD_ELEMS

static int64_t pad_elems_of(size_t elem)
{
    return elem == sizeof(double) ? FA_PAD_ELEMS_F64 : FA_PAD_ELEMS_F32;
}

/* The item kinds a call runs: query items (in groups of at most `group`) on the float kernels, on
 * the dot-product units, and merge items over at most `splits` chunks (none when 1). */
typedef struct {
    int on_float, on_dot;
    int64_t splits;
    int group;
    int gather_q; /* some sequence's items gather their query rows */
    int in_place; /* some sequence's items read their keys in place */
} fa_forward_kinds;

/* The call's scratch plan: the largest carve of the item kinds it runs, sized (plan/scratch.h).
 * Every thread reserves it, and each of these kinds reaches it exactly, so a call's peak is its
 * plan. */
static size_t forward_plan(const fa_forward_job *job, fa_forward_kinds kinds)
{
    const int f64 = job->problem->dtype == FA_F64;
    size_t bytes = 0;
    const int n = kinds.group > 1 ? kinds.group : 1;
    if (kinds.on_float) bytes = f64 ? attend_plan_f64(job, n) : attend_plan_f32(job, n);
    if (kinds.on_dot) bytes = fa_scratch_max(bytes, attend_plan_dot(job, 1));
    if (kinds.splits > 1)
        bytes = fa_scratch_max(bytes, f64 ? merge_plan_f64(job, kinds.splits) : merge_plan_f32(job, kinds.splits));
    return bytes;
}

/* The elements of one (query item, chunk) partial result: the rows' lse [ld], then their outputs
 * [block_q][dv_pad] (forward_item.h). */
static int64_t partial_elems_of(int64_t block_q, int64_t dim_v, int64_t pad)
{
    return fa_round_up(block_q, pad) + block_q * fa_round_up(dim_v, pad);
}

/* A row's share of a partial result, rounded up: the partials then stay within schedule.c's cap. */
static size_t partial_row_bytes_of(int64_t partial_elems, size_t elem, int64_t block_q)
{
    return ((size_t)partial_elems * elem + (size_t)block_q - 1) / (size_t)block_q;
}

/* The plan of every sequence of a batch (into the tables when they are given) and the bytes of
 * the largest wave's partial results. A sequence's split is the one fa_kv_split_make gives the
 * dense problem of that sequence alone: chosen from its shape and the block sizes, never from the
 * rest of the batch or the thread count, so a sequence's rows are bitwise those of a dense call of
 * it alone with the same block sizes. A decode batch (one query item per head) thus splits every
 * sequence's keys, and all threads have chunks to take. */
static size_t plan_sequences(const fa_problem *p, int64_t block_q, int64_t block_k, int64_t partial_elems,
                             size_t elem, int dot, int64_t *first_item, int64_t *first_merge,
                             fa_sequence_plan *plans, fa_forward_kinds *kinds)
{
    size_t row_bytes = partial_row_bytes_of(partial_elems, elem, block_q), wave = 0, largest = 0;
    int64_t items = 0, merges = 0;
    fa_forward_kinds runs = {0, 0, 1, 1, 0, 0};
    for (int64_t b = 0; b < p->batch; b++) {
        fa_problem one;
        forward_problem_of_sequence(p, b, &one);
        fa_q_schedule s = fa_q_schedule_make(&one, block_q);
        fa_kv_split split = fa_kv_split_make(&one, &s, block_k, row_bytes);
        int64_t merge_items = split.splits > 1 ? s.count : 0;
        const int on_dot = dot && rows_take_dot(&one), group = forward_group_of(&one, &s, on_dot);
        if (s.count > 0) { /* the set and grouping sequence_job_ gives it */
            if (on_dot)
                runs.on_dot = 1;
            else
                runs.on_float = 1;
            if (group > runs.group) runs.group = group;
            if (rows_gathered(&one)) runs.gather_q = 1;
            if (!on_dot && reads_in_place(&one)) runs.in_place = 1;
        }
        if (merge_items > 0 && split.splits > runs.splits) runs.splits = split.splits;
        size_t bytes = (size_t)(merge_items * split.splits * partial_elems) * elem; /* <= the cap */
        int starts = b == 0 || (wave > 0 && bytes > FA_SPLIT_MAX_PARTIAL_BYTES - wave);
        if (starts) wave = 0;
        if (plans) {
            first_item[b] = items, first_merge[b] = merges;
            plans[b] = (fa_sequence_plan){split, (int64_t)(wave / elem), starts};
        }
        wave += bytes;
        if (wave > largest) largest = wave;
        items += forward_units(&one, &s, group) * split.splits;
        merges += merge_items;
    }
    if (plans) first_item[p->batch] = items, first_merge[p->batch] = merges;
    if (kinds) *kinds = runs;
    return largest;
}

static int plans_have_waves(const fa_sequence_plan *plans, int64_t batch)
{
    for (int64_t b = 1; b < batch; b++)
        if (plans[b].starts_wave) return 1;
    return 0;
}

/* A batch of sequences: the items of each sequence's own problem, with the block sizes of its
 * longest sequence, so that a sequence computes exactly as a dense call of it alone with those
 * block sizes would. Paged keys are copied tile by tile into two more arena tiles. */
static fa_status forward_sequences(fa_context *ctx, const fa_problem *p)
{
    size_t elem = p->dtype == FA_F64 ? sizeof(double) : sizeof(float);
    int64_t pad = pad_elems_of(elem);
    fa_problem widest = *p, one;
    widest.q_len = widest.kv_len = 0;
    int64_t widest_rows = 0; /* of one head */
    for (int64_t b = 0; b < p->batch; b++) {
        int64_t rows = forward_problem_of_sequence(p, b, &one);
        if (rows > widest_rows) widest_rows = rows;
        if (one.q_len > widest.q_len) widest.q_len = one.q_len;
        if (one.kv_len > widest.kv_len) widest.kv_len = one.kv_len;
    }
    int64_t block_q, block_k;
    const int dot = takes_dot(ctx, &widest);
    fa_blocks_for(ctx, &widest, elem, FA_PASS_FORWARD, dot, &block_q, &block_k);
    int64_t partial_elems = partial_elems_of(block_q, p->dim_v, pad);

    /* the row buffer: the two item tables and the plans, then the largest wave's partials */
    size_t partial_bytes = plan_sequences(p, block_q, block_k, partial_elems, elem, dot, NULL, NULL, NULL, NULL);
    size_t tables =
        2 * (size_t)(p->batch + 1) * sizeof(int64_t) + (size_t)p->batch * sizeof(fa_sequence_plan);
    tables = (tables + 63) / 64 * 64;
    if (fa_context_reserve_rows(ctx, tables + partial_bytes) != 0) return FA_ERR_NOMEM;
    int64_t *first_item = ctx->rows, *first_merge = first_item + p->batch + 1;
    fa_sequence_plan *plans = (fa_sequence_plan *)(first_merge + p->batch + 1);
    fa_forward_kinds kinds;
    plan_sequences(p, block_q, block_k, partial_elems, elem, dot, first_item, first_merge, plans, &kinds);

    fa_forward_job job = {p,
                          ctx->kernels,
                          fa_q_schedule_make(&widest, block_q),
                          block_k,
                          fa_round_up(block_q, pad),
                          {1, 0},
                          (char *)ctx->rows + tables,
                          partial_elems,
                          first_item,
                          first_merge,
                          plans,
                          0,
                          0,
                          dot,
                          p->seqs->block_table != NULL,
                          1,
                          kinds.gather_q,
                          kinds.in_place};
    /* some sequences may run on the dot-product units and others not (sequence_job_) */
    size_t scratch = forward_plan(&job, kinds);
    int f64 = p->dtype == FA_F64;
    fa_status st = FA_OK;
    if (plans_have_waves(plans, p->batch)) st = fa_team_reserve(ctx, scratch);
    for (int64_t b0 = 0; b0 < p->batch && st == FA_OK;) {
        int64_t b1 = b0 + 1;
        while (b1 < p->batch && !plans[b1].starts_wave) b1++;
        job.wave_item0 = first_item[b0];
        job.wave_merge0 = first_merge[b0];
        fa_team_work work = {
            .scratch_bytes = scratch,
            .job = &job,
            .phases = first_merge[b1] > first_merge[b0] ? 2 : 1,
            .phase = {{first_item[b1] - first_item[b0],
                       f64 ? forward_sequence_item_f64 : forward_sequence_item_f32},
                      {first_merge[b1] - first_merge[b0],
                       f64 ? forward_sequence_merge_item_f64 : forward_sequence_merge_item_f32}},
        };
        st = fa_team_run(ctx, &work);
        b0 = b1;
    }
    if (st == FA_OK) {
        ctx->last_block_q = stats_block_q(block_q, widest_rows);
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
    if (!fa_masks_known(p)) return FA_ERR_ARG;
    if (p->seqs) return forward_sequences(ctx, p);
    int64_t rows_per_head = p->q_len;
    fa_problem grouped;
    if (fa_problem_group_rows(p, &grouped)) p = &grouped;
    size_t elem = p->dtype == FA_F64 ? sizeof(double) : sizeof(float);
    int64_t pad = pad_elems_of(elem);
    int64_t block_q, block_k;
    const int dot = takes_dot(ctx, p);
    fa_blocks_for(ctx, p, elem, FA_PASS_FORWARD, dot, &block_q, &block_k);

    fa_forward_job job = {p,
                          ctx->kernels,
                          fa_q_schedule_make(p, block_q),
                          block_k,
                          fa_round_up(block_q, pad),
                          {1, p->kv_len},
                          NULL,
                          partial_elems_of(block_q, p->dim_v, pad),
                          NULL,
                          NULL,
                          NULL,
                          0,
                          0,
                          dot,
                          p->pages != NULL,
                          1,
                          rows_gathered(p),
                          !dot && reads_in_place(p)};
    job.split =
        fa_kv_split_make(p, &job.schedule, block_k, partial_row_bytes_of(job.partial_elems, elem, block_q));
    job.group = forward_group_of(p, &job.schedule, dot);
    const int64_t units = forward_units(p, &job.schedule, job.group);
    int f64 = p->dtype == FA_F64;
    fa_forward_kinds kinds = {!dot, dot, job.split.splits, job.group, job.gather_q, job.in_place};
    size_t scratch = forward_plan(&job, kinds);
    fa_team_work work = {
        .scratch_bytes = scratch,
        .job = &job,
        .phases = 1,
        .phase = {{units, f64 ? forward_item_f64 : forward_item_f32}},
    };
    if (job.split.splits > 1) {
        size_t bytes = (size_t)(job.schedule.count * job.split.splits * job.partial_elems) * elem;
        if (fa_context_reserve_rows(ctx, bytes) != 0) return FA_ERR_NOMEM;
        job.partials = ctx->rows;
        work.phases = 2;
        work.phase[0] = (fa_team_phase){units * job.split.splits, f64 ? forward_chunk_item_f64 : forward_chunk_item_f32};
        work.phase[1] =
            (fa_team_phase){job.schedule.count, f64 ? forward_merge_item_f64 : forward_merge_item_f32};
    }
    fa_status st = fa_team_run(ctx, &work);
    if (st == FA_OK) { /* the statistics describe the last call that succeeded */
        ctx->last_block_q = stats_block_q(block_q, rows_per_head);
        ctx->last_block_k = (int)block_k;
    }
    return st;
}
