/* SPDX-License-Identifier: BSD-3-Clause */
/* Forward pass: cut the problem into query-block items and run them on the team. */
#include "drivers/forward.h"

#include <math.h>
#include <string.h>

#include "plan/block_sizes.h"
#include "runtime/arena.h"
#include "drivers/epilogue.h"
#include "drivers/half_rows.h"
#include "plan/schedule.h"
#include "runtime/team.h"
#include "drivers/visible_products.h"

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
    int pairs;                       /* 1: all-bf16 on the table's bf16 set (forward_pairs.h) */
} fa_forward_job;

/* Whether a problem's items take the bf16 dot-product path: every tensor bf16, a table with a bf16
 * set, an even head dim (the sets multiply pairs of dims; an odd D widens, as every half call does
 * on a table without one), and more than FA_HALF_ROWS query rows a head: a decode step's one row
 * would fill a sixteenth of a tile, where the float kernels read its half cache directly
 * (forward_item.h, scores_half). A batch of sequences decides per sequence (sequence_job_), as a
 * dense call of each would. */
static int takes_pairs(const fa_context *ctx, const fa_problem *p)
{
    return ctx->kernels->bf16 && p->q_type == FA_BF16 && p->kv_type == FA_BF16 && p->dim % 2 == 0 &&
           p->q_len > FA_HALF_ROWS;
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
#define FA_PAIRS_PATH  1
#define FA_HALF_DIRECT 1
#include "drivers/forward_item.h"
#undef FA_PAIRS_PATH
#undef FA_HALF_DIRECT
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
#define FA_PAIRS_PATH  0
#define FA_HALF_DIRECT 0
#include "drivers/forward_item.h"
#undef FA_PAIRS_PATH
#undef FA_HALF_DIRECT
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
    /* the score tile: one query block's of at most FA_FORWARD_SUB_ROWS rows */
    size_t sub_ld = (size_t)fa_query_block_ld((int64_t)ld, FA_FORWARD_SUB_ROWS);
    size_t queries = fa_arena_tile(d, ld, elem), scores = fa_arena_tile(bk, sub_ld, elem);
    size_t accumulator = fa_arena_tile(bq, dv_pad, elem), row_stats = 2 * fa_arena_tile(1, ld, elem);
    return fa_size_add(fa_size_add(queries, scores), fa_size_add(accumulator, row_stats));
}

size_t fa_forward_tile_bytes(int64_t block_q, int64_t block_k, int64_t dim, int64_t dim_v, size_t elem,
                             int q_rows, int kv_tiles)
{
    size_t bytes = 0;
    if (q_rows) bytes = fa_arena_tile((size_t)block_q, (size_t)dim, elem);
    if (kv_tiles)
        bytes = fa_size_add(bytes, fa_size_add(fa_arena_tile((size_t)block_k, (size_t)dim, elem),
                                               fa_arena_tile((size_t)block_k, (size_t)dim_v, elem)));
    return bytes;
}

fa_pairs_tiles fa_pairs_tiles_of(int64_t pad_k, int64_t block_q, int64_t block_k, int64_t dim, int64_t dim_v)
{
    size_t ld = (size_t)fa_round_up(block_q, FA_PAD_ELEMS_F32), bk_k = (size_t)fa_round_up(block_k, pad_k);
    size_t sub_ld = (size_t)fa_query_block_ld((int64_t)ld, FA_PAIRS_SUB_ROWS); /* P: one query block's */
    size_t d_k = (size_t)fa_round_up(dim, pad_k), dv = (size_t)dim_v, half = sizeof(uint16_t);
    fa_pairs_tiles t = {fa_arena_tile(d_k, ld, half), fa_arena_tile(bk_k, sub_ld, half),
                        fa_arena_tile(dv, bk_k + (size_t)pad_k, half), fa_arena_tile(dv, ld, sizeof(float))};
    return t;
}

size_t fa_forward_pairs_scratch_bytes(int64_t pad_k, int64_t block_q, int64_t block_k, int64_t dim,
                                      int64_t dim_v, int paged)
{
    fa_pairs_tiles t = fa_pairs_tiles_of(pad_k, block_q, block_k, dim, dim_v);
    size_t ld = (size_t)fa_round_up(block_q, FA_PAD_ELEMS_F32),
           dv_pad = (size_t)fa_round_up(dim_v, FA_PAD_ELEMS_F32);
    /* the score tile: one query block's */
    size_t sub_ld = (size_t)fa_query_block_ld((int64_t)ld, FA_PAIRS_SUB_ROWS);
    size_t f = sizeof(float), bytes = fa_size_add(fa_size_add(t.queries, t.probabilities),
                                                  fa_size_add(t.values_t, t.accumulator_t));
    bytes = fa_size_add(bytes, fa_size_add(fa_arena_tile((size_t)block_k, sub_ld, f),
                                           fa_arena_tile((size_t)block_q, dv_pad, f)));
    bytes = fa_size_add(bytes, 2 * fa_arena_tile(1, ld, f));
    if (paged)
        bytes =
            fa_size_add(bytes, fa_size_add(fa_arena_tile((size_t)block_k, (size_t)dim, sizeof(uint16_t)),
                                           fa_arena_tile((size_t)block_k, (size_t)dim_v, sizeof(uint16_t))));
    return bytes;
}

/* The tiles a problem's items stage in their arena (forward_item.h): half-precision queries, and
 * paged or half-precision keys and values. */
static size_t problem_tile_bytes(const fa_problem *p, int paged, int64_t block_q, int64_t block_k)
{
    return fa_forward_tile_bytes(block_q, block_k, p->dim, p->dim_v, fa_elem_size(p->dtype),
                                 fa_dtype_is_half(p->q_type), paged || fa_dtype_is_half(p->kv_type));
}

static size_t fa_max_size(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* The arena of a split-KV merge item (forward_item.h): the state write_rows_ reads, and one lse and
 * one row pointer per chunk; within the forward's own formula for any but the smallest tiles. */
static size_t merge_scratch_bytes(int64_t block_q, int64_t dim_v, int64_t splits, size_t elem)
{
    int64_t pad = pad_elems_of(elem);
    size_t ld = (size_t)fa_round_up(block_q, pad), dv_pad = (size_t)fa_round_up(dim_v, pad);
    size_t state = fa_size_add(fa_arena_tile((size_t)block_q, dv_pad, elem), 2 * fa_arena_tile(1, ld, elem));
    return fa_size_add(state, fa_size_add(fa_arena_tile((size_t)splits, 1, elem),
                                          fa_arena_tile((size_t)splits, 1, sizeof(void *))));
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
                             size_t elem, int64_t *first_item, int64_t *first_merge, fa_sequence_plan *plans)
{
    size_t row_bytes = partial_row_bytes_of(partial_elems, elem, block_q), wave = 0, largest = 0;
    int64_t items = 0, merges = 0;
    for (int64_t b = 0; b < p->batch; b++) {
        fa_problem one;
        forward_problem_of_sequence(p, b, &one);
        fa_q_schedule s = fa_q_schedule_make(&one, block_q);
        fa_kv_split split = fa_kv_split_make(&one, &s, block_k, row_bytes);
        int64_t merge_items = split.splits > 1 ? s.count : 0;
        size_t bytes = (size_t)(merge_items * split.splits * partial_elems) * elem; /* <= the cap */
        int starts = b == 0 || (wave > 0 && bytes > FA_SPLIT_MAX_PARTIAL_BYTES - wave);
        if (starts) wave = 0;
        if (plans) {
            first_item[b] = items, first_merge[b] = merges;
            plans[b] = (fa_sequence_plan){split, (int64_t)(wave / elem), starts};
        }
        wave += bytes;
        if (wave > largest) largest = wave;
        items += s.count * split.splits;
        merges += merge_items;
    }
    if (plans) first_item[p->batch] = items, first_merge[p->batch] = merges;
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
    fa_blocks_for(ctx, &widest, elem, FA_PASS_FORWARD, takes_pairs(ctx, &widest), &block_q, &block_k);
    int64_t partial_elems = partial_elems_of(block_q, p->dim_v, pad);

    /* the row buffer: the two item tables and the plans, then the largest wave's partials */
    size_t partial_bytes = plan_sequences(p, block_q, block_k, partial_elems, elem, NULL, NULL, NULL);
    size_t tables =
        2 * (size_t)(p->batch + 1) * sizeof(int64_t) + (size_t)p->batch * sizeof(fa_sequence_plan);
    tables = (tables + 63) / 64 * 64;
    if (fa_context_reserve_rows(ctx, tables + partial_bytes) != 0) return FA_ERR_NOMEM;
    int64_t *first_item = ctx->rows, *first_merge = first_item + p->batch + 1;
    fa_sequence_plan *plans = (fa_sequence_plan *)(first_merge + p->batch + 1);
    plan_sequences(p, block_q, block_k, partial_elems, elem, first_item, first_merge, plans);

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
                          0};
    /* some sequences may take the dot-product path and others not (sequence_job_): room for either */
    job.pairs = takes_pairs(ctx, &widest);
    size_t scratch = fa_size_add(fa_forward_scratch_bytes(block_q, block_k, p->dim, p->dim_v, elem),
                                 problem_tile_bytes(p, p->seqs->block_table != NULL, block_q, block_k));
    if (job.pairs)
        scratch = fa_max_size(scratch,
                              fa_forward_pairs_scratch_bytes(ctx->kernels->bf16->pad_k, block_q, block_k,
                                                             p->dim, p->dim_v, p->seqs->block_table != NULL));
    scratch = fa_max_size(scratch, merge_scratch_bytes(block_q, p->dim_v, FA_SPLIT_TARGET_ITEMS, elem));
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
    fa_blocks_for(ctx, p, elem, FA_PASS_FORWARD, takes_pairs(ctx, p), &block_q, &block_k);

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
                          takes_pairs(ctx, p)};
    job.split =
        fa_kv_split_make(p, &job.schedule, block_k, partial_row_bytes_of(job.partial_elems, elem, block_q));
    int f64 = p->dtype == FA_F64;
    size_t scratch = job.pairs
                         ? fa_forward_pairs_scratch_bytes(ctx->kernels->bf16->pad_k, block_q, block_k, p->dim,
                                                          p->dim_v, p->pages != NULL)
                         : fa_size_add(fa_forward_scratch_bytes(block_q, block_k, p->dim, p->dim_v, elem),
                                       problem_tile_bytes(p, 0, block_q, block_k));
    if (job.split.splits > 1)
        scratch = fa_max_size(scratch, merge_scratch_bytes(block_q, p->dim_v, job.split.splits, elem));
    fa_team_work work = {
        .scratch_bytes = scratch,
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
        ctx->last_block_q = stats_block_q(block_q, rows_per_head);
        ctx->last_block_k = (int)block_k;
    }
    return st;
}
