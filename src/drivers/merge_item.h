/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_merge's work item, written once for both element types: included by merge.c with FA_T,
 * FA_SFX, FA_EXP and FA_LOG defined. */

#include "template.h"

#include "drivers/merge_row.h"

/* The regions of a merge item: one row's gathered lse values and part pointers, and for half
 * precision the parts' rows widened and the merged row before its rounding (sizing and carving
 * alike, plan/scratch.h). */
typedef struct {
    FA_T *lses;
    const FA_T **parts;
    FA_T *wide, *merged;
} FA_NAME(merge_scratch_);

static void FA_NAME(merge_carve_)(fa_scratch *sc, const fa_merge_problem *mp, FA_NAME(merge_scratch_) * m)
{
    const size_t n = (size_t)mp->n, dim = (size_t)mp->out->dim;
    m->lses = fa_scratch_take(sc, n, 1, sizeof(FA_T));
    m->parts = fa_scratch_take(sc, n, 1, sizeof(FA_T *));
    m->wide = m->merged = NULL;
    if (fa_dtype_is_half(mp->out->dtype)) {
        m->wide = fa_scratch_take(sc, n, dim, sizeof(FA_T));
        m->merged = fa_scratch_take(sc, 1, dim, sizeof(FA_T));
    }
}

static size_t FA_NAME(merge_plan_)(const fa_merge_problem *mp)
{
    FA_NAME(merge_scratch_) m;
    fa_scratch sizer = fa_scratch_sizer();
    FA_NAME(merge_carve_)(&sizer, mp, &m);
    return sizer.bytes;
}

/* The rows [row0, row0 + rows) of (batch, head), each merged by merge_row_ (merge_row.h) from the
 * parts' rows and lse values gathered into the arena. Half-precision rows (float's items only) are
 * widened into the arena first, merged in float, and the result rounded once. */
static void FA_NAME(merge_rows_)(const fa_merge_job *job, fa_arena *arena, int64_t index)
{
    const fa_merge_problem *mp = job->problem;
    const fa_tensor *out = mp->out;
    const int half = fa_dtype_is_half(out->dtype);
    const int64_t elem = (int64_t)fa_elem_size(out->dtype);
    int64_t bh = index / job->row_blocks, row0 = index % job->row_blocks * MERGE_ROWS;
    int64_t b = bh / out->heads, h = bh % out->heads;
    int64_t rows = out->seq - row0 < MERGE_ROWS ? out->seq - row0 : MERGE_ROWS;
    FA_NAME(merge_scratch_) m;
    fa_scratch scratch = fa_scratch_carver(arena);
    FA_NAME(merge_carve_)(&scratch, mp, &m);
    FA_T *lses = m.lses, *wide = m.wide, *merged = m.merged;
    const FA_T **parts = m.parts;
    for (int64_t i = row0; i < row0 + rows; i++) {
        int64_t at = (b * out->heads + h) * out->seq + i; /* this row in every lse */
        for (int k = 0; k < mp->n; k++) {
            const fa_tensor *part = &mp->outs[k];
            lses[k] = ((const FA_T *)mp->lses[k])[at];
            const char *row = (const char *)part->data +
                              (b * part->stride_batch + h * part->stride_head + i * part->stride_seq) * elem;
            parts[k] = (const FA_T *)(const void *)row;
            if (half) {
                FA_T *w = wide + (int64_t)k * out->dim;
                for (int64_t y = 0; y < out->dim; y++) w[y] = fa_half_load(out->dtype, row, y);
                parts[k] = w;
            }
        }
        char *o =
            (char *)out->data + (b * out->stride_batch + h * out->stride_head + i * out->stride_seq) * elem;
        FA_T lse;
        FA_NAME(merge_row_)(mp->n, lses, parts, out->dim, half ? merged : (FA_T *)(void *)o, &lse);
        if (half)
            for (int64_t y = 0; y < out->dim; y++) fa_half_store(out->dtype, o, y, (float)merged[y]);
        if (mp->lse) ((FA_T *)mp->lse)[at] = lse;
    }
}
