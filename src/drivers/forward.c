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
    fa_decode_reads reads;           /* ... in token order or not, and prefetching (fa_decode_reads_for) */
} fa_forward_job;

/* Whether a problem's query rows are not evenly apart within an item: a grouped problem's rows over
 * several positions, which the items gather one by one before packing them. */
static int rows_gathered(const fa_problem *p)
{
    return p->row_group > 1 && p->q_len > p->row_group;
}

/* Whether a contiguous cache holds each kv head's keys one after another ([head][token][dim]): head
 * after head then reads one stream at a time, where token order would read Hkv places as far apart
 * as a head's whole cache in every run of keys. On a Zen 3 VM (`fa-bench --preset decode`, B1 H8
 * Nk32768 D128 f32, [head][token][dim], 1 thread, interleaved rounds) token order took 31.3-39.3 ms,
 * head after head 24.6-31.5 (bench/results/2026-12-06-zen3-read-probe-runs.md). A paged cache keeps
 * token order: a page's rows lie near each other whatever its layout. */
static int heads_in_own_runs(const fa_problem *p)
{
    const int paged = p->pages != NULL || (p->seqs != NULL && p->seqs->block_table != NULL);
    return !paged && p->k.stride_seq == p->dim && p->v.stride_seq == p->dim_v;
}

/* How a decode step over p's cache reads it (plan/block_sizes.h), but never in token order where
 * each head's keys lie one after another. */
static fa_decode_reads decode_reads(const fa_context *ctx, const fa_problem *p)
{
    fa_decode_reads reads = fa_decode_reads_for(&ctx->cpu, p->dim * (int64_t)fa_elem_size(p->kv_type));
    if (heads_in_own_runs(p)) reads.token_order = 0;
    return reads;
}

/* Whether a problem's items read their keys and values where they lie, by row lists
 * (forward_float.h): a decode step (at most FA_HALF_ROWS query rows, so one query block an item) in
 * f32, the type of the tables' scores_stored and accumulate_stored, over a cache stored in another
 * type or paged, or over a contiguous f32 cache where the CPU takes far prefetches, which only the
 * lists' kernels make (fa_decode_reads_for). Otherwise stored or paged keys are staged in tiles
 * (kv_tiles.h). */
static int reads_in_place(const fa_problem *p, fa_decode_reads reads)
{
    return p->dtype == FA_F32 && p->q_len <= FA_HALF_ROWS &&
           (fa_kv_widens(p) || p->pages != NULL || reads.rows == FA_ROWS_PREFETCH_FAR);
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

/* Group g of a problem's query items grouped `group` at a time: its batch entry, its first head, and
 * how many heads it runs (fewer in a batch entry's last group). */
static int group_heads(const fa_problem *p, int group, int64_t g, int64_t *batch, int64_t *h0)
{
    const int64_t per_batch = (p->q_heads + group - 1) / group;
    *batch = g / per_batch;
    *h0 = g % per_batch * group;
    return (int)(p->q_heads - *h0 < group ? p->q_heads - *h0 : group);
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

/* Phase-0 item `index` of a job that splits its keys: its unit (a query item or a group of them),
 * its chunk and the chunk's keys [key_lo, key_hi) (key_hi may pass Nk: the last chunk is shorter). */
static int64_t chunk_item_(const fa_forward_job *job, int64_t index, int64_t *chunk, int64_t *key_lo,
                           int64_t *key_hi)
{
    *chunk = index % job->split.splits;
    *key_lo = *chunk * job->split.chunk;
    *key_hi = *key_lo + job->split.chunk;
    return index / job->split.splits;
}

/* The job of sequence b of a batch (its dense problem `one`), partial results aside: the schedule,
 * split, product set and grouping a dense call of it alone would take. */
static fa_forward_job sequence_plan(const fa_forward_job *job, const fa_problem *one, int64_t b)
{
    fa_forward_job mine = *job;
    mine.problem = one;
    mine.schedule = fa_q_schedule_make(one, job->schedule.block_q);
    mine.split = job->plans[b].split;
    mine.dot = job->dot && rows_take_dot(one); /* takes_dot of the sequence alone */
    mine.group = forward_group_of(one, &mine.schedule, mine.dot);
    return mine;
}

#define FA_T         float
#define FA_SFX       f32
#define FA_LOG       logf
#define FA_EXP       expf
#define FA_PAD_ELEMS FA_PAD_ELEMS_F32
#define FA_DOT_UNITS 1
#include "drivers/forward_item.h"
#undef FA_DOT_UNITS
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
#define FA_DOT_UNITS 0
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
        bytes = fa_scratch_max(bytes,
                               f64 ? merge_plan_f64(job, kinds.splits) : merge_plan_f32(job, kinds.splits));
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
static size_t plan_sequences(const fa_context *ctx, const fa_problem *p, int64_t block_q, int64_t block_k,
                             int64_t partial_elems, size_t elem, int dot, int64_t *first_item,
                             int64_t *first_merge, fa_sequence_plan *plans, fa_forward_kinds *kinds)
{
    size_t row_bytes = partial_row_bytes_of(partial_elems, elem, block_q), wave = 0, largest = 0;
    int64_t items = 0, merges = 0;
    fa_forward_kinds runs = {0, 0, 1, 1, 0, 0};
    const fa_decode_reads reads = decode_reads(ctx, p); /* the sequences share dim and kv_type */
    for (int64_t b = 0; b < p->batch; b++) {
        fa_problem one;
        forward_problem_of_sequence(p, b, &one);
        fa_q_schedule s = fa_q_schedule_make(&one, block_q);
        const int on_dot = dot && rows_take_dot(&one), group = forward_group_of(&one, &s, on_dot);
        fa_kv_split split = fa_kv_split_make(&one, &s, forward_units(&one, &s, group), block_k, row_bytes);
        int64_t merge_items = split.splits > 1 ? s.count : 0;
        if (s.count > 0) { /* the set and grouping sequence_job_ gives it */
            if (on_dot)
                runs.on_dot = 1;
            else
                runs.on_float = 1;
            if (group > runs.group) runs.group = group;
            if (rows_gathered(&one)) runs.gather_q = 1;
            if (!on_dot && reads_in_place(&one, reads)) runs.in_place = 1;
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

/* The sequence after the last of the wave that sequence b0 starts. */
static int64_t wave_end(const fa_sequence_plan *plans, int64_t batch, int64_t b0)
{
    int64_t b1 = b0 + 1;
    while (b1 < batch && !plans[b1].starts_wave) b1++;
    return b1;
}

/* A batch of sequences' plan: the items of each sequence's own problem, with the block sizes of its
 * longest sequence, so that a sequence computes exactly as a dense call of it alone with those
 * block sizes would. Its tables and partial results live in the context's row buffer. */
static fa_status sequences_job(fa_context *ctx, const fa_problem *p, fa_forward_job *job, size_t *scratch,
                               int64_t *widest_rows_out)
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
    size_t partial_bytes =
        plan_sequences(ctx, p, block_q, block_k, partial_elems, elem, dot, NULL, NULL, NULL, NULL);
    size_t tables =
        2 * (size_t)(p->batch + 1) * sizeof(int64_t) + (size_t)p->batch * sizeof(fa_sequence_plan);
    tables = (tables + 63) / 64 * 64;
    if (fa_context_reserve_rows(ctx, tables + partial_bytes) != 0) return FA_ERR_NOMEM;
    int64_t *first_item = ctx->rows, *first_merge = first_item + p->batch + 1;
    fa_sequence_plan *plans = (fa_sequence_plan *)(first_merge + p->batch + 1);
    fa_forward_kinds kinds;
    plan_sequences(ctx, p, block_q, block_k, partial_elems, elem, dot, first_item, first_merge, plans,
                   &kinds);

    *job = (fa_forward_job){p,
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
                            kinds.in_place,
                            decode_reads(ctx, p)};
    /* some sequences may run on the dot-product units and others not (sequence_job_) */
    *scratch = forward_plan(job, kinds);
    *widest_rows_out = widest_rows;
    return FA_OK;
}

/* A batch of sequences: its waves one after another, each a team run of its sequences' items, then
 * their merges. Paged keys are copied tile by tile into two more arena tiles. */
static fa_status forward_sequences(fa_context *ctx, const fa_problem *p)
{
    fa_forward_job job;
    size_t scratch;
    int64_t widest_rows;
    fa_status st = sequences_job(ctx, p, &job, &scratch, &widest_rows);
    if (st != FA_OK) return st;
    const int64_t *first_item = job.first_item, *first_merge = job.first_merge;
    int f64 = p->dtype == FA_F64;
    if (plans_have_waves(job.plans, p->batch)) st = fa_team_reserve(ctx, scratch);
    for (int64_t b0 = 0; b0 < p->batch && st == FA_OK;) {
        int64_t b1 = wave_end(job.plans, p->batch, b0);
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
        ctx->last_block_q = stats_block_q(job.schedule.block_q, widest_rows);
        ctx->last_block_k = (int)job.block_k;
    }
    return st;
}

/* A dense call's plan (p grouped as fa_forward_run groups it): its block sizes, query items, key
 * split and grouping; *units: the query items or groups of them that phase 0 cuts into chunks. */
static fa_forward_job dense_job(const fa_context *ctx, const fa_problem *p, int64_t *units)
{
    size_t elem = p->dtype == FA_F64 ? sizeof(double) : sizeof(float);
    int64_t pad = pad_elems_of(elem);
    int64_t block_q, block_k;
    const int dot = takes_dot(ctx, p);
    fa_blocks_for(ctx, p, elem, FA_PASS_FORWARD, dot, &block_q, &block_k);
    const fa_decode_reads reads = decode_reads(ctx, p);

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
                          !dot && reads_in_place(p, reads),
                          reads};
    job.group = forward_group_of(p, &job.schedule, dot);
    *units = forward_units(p, &job.schedule, job.group);
    job.split = fa_kv_split_make(p, &job.schedule, *units, block_k,
                                 partial_row_bytes_of(job.partial_elems, elem, block_q));
    return job;
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
    int64_t units;
    fa_forward_job job = dense_job(ctx, p, &units);
    int f64 = p->dtype == FA_F64;
    fa_forward_kinds kinds = {!job.dot, job.dot, job.split.splits, job.group, job.gather_q, job.in_place};
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
        work.phase[0] =
            (fa_team_phase){units * job.split.splits, f64 ? forward_chunk_item_f64 : forward_chunk_item_f32};
        work.phase[1] =
            (fa_team_phase){job.schedule.count, f64 ? forward_merge_item_f64 : forward_merge_item_f32};
    }
    fa_status st = fa_team_run(ctx, &work);
    if (st == FA_OK) { /* the statistics describe the last call that succeeded */
        ctx->last_block_q = stats_block_q(job.schedule.block_q, rows_per_head);
        ctx->last_block_k = (int)job.block_k;
    }
    return st;
}

/* ---- the item list (fa_forward_items) ---- */

/* The key tiles and (row, key) pairs query rows [row0, row0 + rows) compute over keys
 * [key_lo, key_hi): each query block of the set's width walks the key blocks it meets, each tile as
 * wide as the block's rows see, as the items do (plan/mask.h). */
static void item_work(const fa_forward_job *job, int64_t row0, int64_t rows, int64_t key_lo, int64_t key_hi,
                      fa_forward_item_info *info)
{
    const fa_problem *p = job->problem;
    const int64_t width = job->dot ? FA_DOT_BLOCK_ROWS : FA_FLOAT_BLOCK_ROWS, bk = job->block_k;
    for (int64_t r = row0; r < row0 + rows; r += width) {
        const int64_t n = row0 + rows - r < width ? row0 + rows - r : width;
        const fa_key_blocks seen = fa_key_blocks_seen(p, r, n, bk);
        for (int64_t t = seen.first; t < seen.end; t++) {
            const int64_t col0 = t * bk, cols = p->kv_len - col0 < bk ? p->kv_len - col0 : bk;
            if (col0 < key_lo || col0 >= key_hi) continue; /* chunks hold whole tiles */
            const fa_key_range c = fa_tile_cols_seen(p, r, n, col0, cols);
            if (c.end <= c.begin) continue;
            info->tiles++;
            info->pairs += n * (c.end - c.begin);
        }
    }
}

/* Item `index` of `phase` of a job, decoded as the item functions decode it (forward_item.h). */
static fa_forward_item_info item_info(const fa_forward_job *job, int run, int phase, int64_t index)
{
    const fa_problem *p = job->problem;
    fa_forward_item_info info = {run, phase, 0, 0, 1, 0, 0, 0, p->kv_len, 0, 0, 1, p->dim, p->dim_v};
    fa_q_item it;
    if (phase == 1) { /* a merge of one query item's chunks */
        it = fa_q_schedule_item(&job->schedule, p, index);
        info.splits = job->split.splits;
    } else {
        int64_t unit = index, chunk;
        if (job->split.splits > 1) unit = chunk_item_(job, index, &chunk, &info.key_lo, &info.key_hi);
        if (info.key_hi > p->kv_len) info.key_hi = p->kv_len;
        if (job->group > 1) {
            int64_t b, h0;
            info.heads = group_heads(p, job->group, unit, &b, &h0);
            it = fa_q_schedule_item(&job->schedule, p, b * p->q_heads + h0);
        } else {
            it = fa_q_schedule_item(&job->schedule, p, unit);
        }
        item_work(job, it.row0, it.rows, info.key_lo, info.key_hi, &info);
        info.tiles *= info.heads;
        info.pairs *= info.heads;
    }
    info.batch = it.batch;
    info.q_head = it.q_head;
    info.row0 = it.row0;
    info.rows = it.rows;
    return info;
}

fa_status fa_forward_items(fa_context *ctx, const fa_problem *p,
                           void (*visit)(void *user, const fa_forward_item_info *item), void *user)
{
    if (p->dtype != FA_F32 && p->dtype != FA_F64) return FA_ERR_UNSUPPORTED;
    if (!p->seqs) {
        fa_problem grouped;
        if (fa_problem_group_rows(p, &grouped)) p = &grouped;
        int64_t units;
        const fa_forward_job job = dense_job(ctx, p, &units);
        for (int64_t i = 0; i < units * job.split.splits; i++) {
            const fa_forward_item_info info = item_info(&job, 0, 0, i);
            visit(user, &info);
        }
        for (int64_t i = 0; job.split.splits > 1 && i < job.schedule.count; i++) {
            const fa_forward_item_info info = item_info(&job, 0, 1, i);
            visit(user, &info);
        }
        return FA_OK;
    }
    fa_forward_job job;
    size_t scratch;
    int64_t widest_rows;
    fa_status st = sequences_job(ctx, p, &job, &scratch, &widest_rows);
    if (st != FA_OK) return st;
    int run = 0;
    for (int64_t b0 = 0, b1; b0 < p->batch; b0 = b1, run++) {
        b1 = wave_end(job.plans, p->batch, b0);
        for (int phase = 0; phase < 2; phase++) {
            const int64_t *first = phase == 0 ? job.first_item : job.first_merge;
            for (int64_t g = first[b0]; g < first[b1]; g++) {
                const int64_t b = fa_sequence_of_item(first, p->batch, g);
                fa_problem one;
                forward_problem_of_sequence(p, b, &one);
                const fa_forward_job mine = sequence_plan(&job, &one, b);
                fa_forward_item_info info = item_info(&mine, run, phase, g - first[b]);
                info.batch = b;
                visit(user, &info);
            }
        }
    }
    return FA_OK;
}
