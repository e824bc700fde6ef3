/* SPDX-License-Identifier: BSD-3-Clause */
/* Forward work items, written once for both accumulation types: included by forward.c with FA_T,
 * FA_SFX (f32/f64: also the kernel-table member), FA_LOG, FA_EXP, FA_PAD_ELEMS (the padding unit of
 * accumulator rows, kernels.h) and FA_DOT_UNITS (1 for float: the set of bf16 dot-product units)
 * defined.
 *
 * The item's online softmax is forward_attend.h, instantiated once per set of tile products: the
 * table's float kernels (forward_float.h), and in float also bf16 dot-product units
 * (forward_dot.h). Here: what every set shares (the softmax state, the query blocks, where keys and
 * values come from) and what follows the softmax whatever the set (the rows written, the split-KV
 * chunks and their merge, the sequences of a batch). */

#include "template.h"

/* The online-softmax state of one query item: unnormalized output rows (stride acc_stride),
 * running max and sum per row. */
typedef struct {
    FA_T *acc, *row_max, *row_sum;
    int64_t acc_stride;
} FA_NAME(rows_state_);

/* One query block of an item, as a set's products see it: at most the set's rows (row0 of the
 * problem), their packed queries (the set's layout), their accumulator (the set's layout: rows, or
 * transposed) and their part of the row statistics. */
typedef struct {
    int64_t row0, rows, ld, first, end; /* [first, end): the key blocks it meets */
    void *queries;
    FA_T *acc, *row_max, *row_sum;
} FA_NAME(query_block_);

#include "drivers/kv_tiles.h"

#define FA_SET FA_SFX
#include "drivers/forward_float.h"
#include "drivers/forward_attend.h"
#undef FA_SET

#if FA_DOT_UNITS
#define FA_SET dot
#include "drivers/forward_dot.h"
#include "drivers/forward_attend.h"
#undef FA_SET
#endif

/* The item's online softmax on the set its job takes: the bf16 dot-product units, or the float
 * kernels. */
static FA_NAME(rows_state_) FA_NAME(attend_item_)(const fa_forward_job *job, fa_arena *arena,
                                                  const fa_q_item *it, int64_t key_lo, int64_t key_hi)
{
#if FA_DOT_UNITS
    if (job->dot) return attend_dot(job, arena, it, key_lo, key_hi);
#endif
    return FA_CAT(attend_, FA_SFX)(job, arena, it, key_lo, key_hi);
}

/* The query items of group `g` of a job that groups them (job->group > 1, forward.c: a decode step's
 * heads): the items of one batch entry's heads g·group .. g·group + group - 1 (fewer at the end), in
 * head order, all of the same rows. Returns their count; `first` is the first's schedule index. */
static int FA_NAME(group_items_)(const fa_forward_job *job, int64_t g, fa_q_item *its, int64_t *first)
{
    const fa_problem *p = job->problem;
    int64_t b, h0;
    const int n = group_heads(p, job->group, g, &b, &h0);
    *first = b * p->q_heads + h0; /* one query block a head: the schedule's index of (b, h0) */
    for (int i = 0; i < n; i++) its[i] = fa_q_schedule_item(&job->schedule, p, *first + i);
    return n;
}

/* out = acc / l and lse = m + log(l) for the item's rows, where l = sum_j exp(s_j - m). With a
 * sink logit σ the denominator gains exp(σ - m): for the larger reference M = max(m, σ),
 * out = acc·exp(m - M) / (l·exp(m - M) + exp(σ - M)) and lse = M + log(that denominator), so
 * neither exponential overflows whichever of m and σ is larger. */
static void FA_NAME(write_rows_)(const fa_problem *p, const fa_q_item *it, const FA_NAME(rows_state_) * st)
{
    const size_t out_elem = fa_elem_size(p->out_type);
    const int out_half = fa_out_rounds(p);
    char *out = (char *)fa_view_at(&p->out, out_elem, it->batch, it->q_head, 0);
    FA_T *lse_head =
        p->lse ? (FA_T *)p->lse + (it->batch * p->q_heads + it->q_head) * p->lse_head_stride : NULL;
    const int has_sink = p->sinks != NULL;
    const FA_T sink = has_sink ? (FA_T)p->sinks[it->q_head] : 0;
    for (int64_t r = 0; r < it->rows; r++) {
        const int64_t row_at = it->row0 + r; /* a grouped problem's rows step over heads and positions */
        char *row = out + fa_row_offset(p, row_at, p->out.stride_seq, p->out_sub_stride) * (int64_t)out_elem;
        FA_T *lse =
            lse_head ? lse_head + fa_row_offset(p, row_at, p->lse_row_stride, p->lse_sub_stride) : NULL;
        FA_T *o =
            out_half ? st->acc + r * st->acc_stride : (FA_T *)(void *)row; /* half: in place, then rounded */
        const FA_T *a = st->acc + r * st->acc_stride;
        FA_T l = st->row_sum[r], m = st->row_max[r];
        /* l == 0 exactly when the row saw no key: exact zeros and -inf (the sink's logit with a
         * sink), never 0/0. A NaN l is not 0, so a row that saw a NaN stays NaN. */
        if (l == 0) {
            for (int64_t y = 0; y < p->dim_v; y++) o[y] = 0;
            if (lse) *lse = has_sink ? sink : -(FA_T)INFINITY;
        } else if (!has_sink) {
            for (int64_t y = 0; y < p->dim_v; y++) o[y] = a[y] / l;
            if (lse) *lse = m + FA_LOG(l);
        } else {
            FA_T big = m > sink ? m : sink, keys = l * FA_EXP(m - big), denom = keys + FA_EXP(sink - big);
            FA_T w = FA_EXP(m - big) / denom;
            for (int64_t y = 0; y < p->dim_v; y++) o[y] = a[y] * w;
            if (lse) *lse = big + FA_LOG(denom);
        }
        /* the row in the accumulation type, rounded once to the output's */
        if (out_half)
            for (int64_t y = 0; y < p->dim_v; y++) fa_half_store(p->out_type, row, y, (float)o[y]);
    }
}

static void FA_NAME(forward_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_forward_job *job = job_ptr;
    if (job->group > 1) {                    /* a group of a decode step's heads, written one after another */
        fa_q_item its[FA_GROUP_ITEMS] = {0}; /* group_items_ fills n of them; gcc -O3 cannot see it */
        FA_NAME(rows_state_) states[FA_GROUP_ITEMS];
        int64_t first;
        int n = FA_NAME(group_items_)(job, index, its, &first);
        FA_CAT(attend_group_, FA_SFX)(job, arena, its, n, 0, job->problem->kv_len, states);
        for (int i = 0; i < n; i++) FA_NAME(write_rows_)(job->problem, &its[i], &states[i]);
        return;
    }
    fa_q_item it = fa_q_schedule_item(&job->schedule, job->problem, index);
    FA_NAME(rows_state_) st = FA_NAME(attend_item_)(job, arena, &it, 0, job->problem->kv_len);
    FA_NAME(write_rows_)(job->problem, &it, &st);
}

/* ---- split-KV: (query item, chunk) items write partial results, merge items combine them ----
 * The partial result of (item i, chunk c) is at partials + (i·splits + c)·partial_elems: the rows'
 * lse [ld], then their normalized outputs [block_q][dv_pad], the form fa_merge takes, so that both
 * merge with merge_row_ (merge_row.h). */

#include "drivers/merge_row.h"

static FA_T *FA_NAME(partial_at_)(const fa_forward_job *job, int64_t item, int64_t chunk)
{
    return (FA_T *)job->partials + (item * job->split.splits + chunk) * job->partial_elems;
}

/* A chunk's rows as fa_merge takes them: each row's lse, and its normalized output. */
static void FA_NAME(write_partial_)(const fa_forward_job *job, const fa_q_item *it,
                                    const FA_NAME(rows_state_) * st, int64_t item, int64_t chunk)
{
    FA_T *lse = FA_NAME(partial_at_)(job, item, chunk), *out = lse + job->ld;
    for (int64_t r = 0; r < it->rows; r++) {
        FA_T l = st->row_sum[r];
        if (l == 0) { /* the row saw no key of this chunk: its row is never read */
            lse[r] = -(FA_T)INFINITY;
            continue;
        }
        lse[r] = st->row_max[r] + FA_LOG(l);
        const FA_T *a = st->acc + r * st->acc_stride;
        FA_T *o = out + r * st->acc_stride;
        for (int64_t y = 0; y < job->problem->dim_v; y++) o[y] = a[y] / l;
    }
}

static void FA_NAME(forward_chunk_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_forward_job *job = job_ptr;
    int64_t key_lo, key_hi, chunk;
    const int64_t unit = chunk_item_(job, index, &chunk, &key_lo, &key_hi);
    if (job->group > 1) {                    /* a group of a decode step's heads over one chunk */
        fa_q_item its[FA_GROUP_ITEMS] = {0}; /* group_items_ fills n of them; gcc -O3 cannot see it */
        FA_NAME(rows_state_) states[FA_GROUP_ITEMS];
        int64_t first;
        int n = FA_NAME(group_items_)(job, unit, its, &first);
        FA_CAT(attend_group_, FA_SFX)(job, arena, its, n, key_lo, key_hi, states);
        for (int i = 0; i < n; i++) FA_NAME(write_partial_)(job, &its[i], &states[i], first + i, chunk);
        return;
    }
    fa_q_item it = fa_q_schedule_item(&job->schedule, job->problem, unit);
    FA_NAME(rows_state_) st = FA_NAME(attend_item_)(job, arena, &it, key_lo, key_hi);
    FA_NAME(write_partial_)(job, &it, &st, unit, chunk);
}

/* The regions of a merge item: the state write_rows_ reads, then one lse and one row pointer per
 * chunk (sizing and carving alike, plan/scratch.h). */
typedef struct {
    FA_NAME(rows_state_) st;
    FA_T *lses;
    const FA_T **rows;
} FA_NAME(merge_scratch_);

static void FA_NAME(merge_carve_)(fa_scratch *sc, const fa_forward_job *job, int64_t splits,
                                  FA_NAME(merge_scratch_) * m)
{
    const size_t e = sizeof(FA_T);
    const int64_t dv_pad = fa_round_up(job->problem->dim_v, FA_PAD_ELEMS);
    m->st.acc = fa_scratch_take(sc, (size_t)job->schedule.block_q, (size_t)dv_pad, e);
    m->st.row_max = fa_scratch_take(sc, 1, (size_t)job->ld, e);
    m->st.row_sum = fa_scratch_take(sc, 1, (size_t)job->ld, e);
    m->st.acc_stride = dv_pad;
    m->lses = fa_scratch_take(sc, (size_t)splits, 1, e);
    m->rows = fa_scratch_take(sc, (size_t)splits, 1, sizeof(FA_T *));
}

/* The arena bytes of a merge item over `splits` chunks. */
static size_t FA_NAME(merge_plan_)(const fa_forward_job *job, int64_t splits)
{
    FA_NAME(merge_scratch_) m;
    fa_scratch sizer = fa_scratch_sizer();
    FA_NAME(merge_carve_)(&sizer, job, splits, &m);
    return sizer.bytes;
}

/* Merges the chunks of one query item in chunk order into a state write_rows_ finishes as it
 * finishes an unsplit item: row max = the merged lse, row sum = 1 (0 for a row no chunk saw),
 * acc = the merged output, so the sink, when there is one, enters once, after the merge. */
static void FA_NAME(forward_merge_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_forward_job *job = job_ptr;
    const fa_problem *p = job->problem;
    fa_q_item it = fa_q_schedule_item(&job->schedule, p, index);
    const int64_t ld = job->ld, splits = job->split.splits;
    FA_NAME(merge_scratch_) m;
    fa_scratch scratch = fa_scratch_carver(arena);
    FA_NAME(merge_carve_)(&scratch, job, splits, &m);
    const int64_t dv_pad = m.st.acc_stride;
    for (int64_t r = 0; r < it.rows; r++) {
        for (int64_t c = 0; c < splits; c++) {
            const FA_T *part = FA_NAME(partial_at_)(job, index, c);
            m.lses[c] = part[r];
            m.rows[c] = part + ld + r * dv_pad;
        }
        int seen =
            FA_NAME(merge_row_)(splits, m.lses, m.rows, p->dim_v, m.st.acc + r * dv_pad, &m.st.row_max[r]);
        m.st.row_sum[r] = seen ? 1 : 0;
    }
    FA_NAME(write_rows_)(p, &it, &m.st);
}

/* ---- a batch of sequences: the items of each sequence's own dense problem ----
 * Phase 0 item g (numbered over all sequences, from the wave's first) is item g - first_item[b] of
 * sequence b: a whole query item, or a (query item, chunk) item when the sequence splits; phase 1
 * items merge the split sequences' chunks. Each runs exactly as a dense call of its sequence alone
 * would run it (same tiles, same split, same merge order). */

static fa_forward_job FA_NAME(sequence_job_)(const fa_forward_job *job, const fa_problem *one, int64_t b)
{
    fa_forward_job mine = sequence_plan(job, one, b);
    mine.partials = (FA_T *)job->partials + job->plans[b].partials;
    return mine;
}

static void FA_NAME(forward_sequence_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_forward_job *job = job_ptr;
    int64_t g = job->wave_item0 + index;
    int64_t b = fa_sequence_of_item(job->first_item, job->problem->batch, g);
    fa_problem one;
    forward_problem_of_sequence(job->problem, b, &one);
    fa_forward_job mine = FA_NAME(sequence_job_)(job, &one, b);
    if (mine.split.splits > 1)
        FA_NAME(forward_chunk_item_)(&mine, arena, g - job->first_item[b]);
    else
        FA_NAME(forward_item_)(&mine, arena, g - job->first_item[b]);
}

static void FA_NAME(forward_sequence_merge_item_)(const void *job_ptr, fa_arena *arena, int64_t index)
{
    const fa_forward_job *job = job_ptr;
    int64_t g = job->wave_merge0 + index;
    int64_t b = fa_sequence_of_item(job->first_merge, job->problem->batch, g);
    fa_problem one;
    forward_problem_of_sequence(job->problem, b, &one);
    fa_forward_job mine = FA_NAME(sequence_job_)(job, &one, b);
    FA_NAME(forward_merge_item_)(&mine, arena, g - job->first_merge[b]);
}
