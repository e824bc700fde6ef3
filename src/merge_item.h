/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_merge's work item, written once for both element types: included by merge.c with FA_T,
 * FA_SFX, FA_EXP and FA_LOG defined. */

#define FA_CAT2(a, b) a##b
#define FA_CAT(a, b)  FA_CAT2(a, b)
#define FA_NAME(n)    FA_CAT(n, FA_SFX)

/* The rows [row0, row0 + rows) of (batch, head): with M the largest part lse (NaN wins),
 * w_k = exp(lse_k - M), out = sum_k w_k·out_k / sum_k w_k and lse = M + log(sum_k w_k), summed in
 * part order. Parts with lse = -inf weigh exactly 0 and are skipped, so a NaN or Inf in a part
 * that saw no key reaches nothing; a row no part saw gets zeros and -inf. */
static void FA_NAME(merge_rows_)(const fa_merge_job *job, fa_arena *arena, int64_t index)
{
    const fa_merge_problem *mp = job->problem;
    const fa_tensor *out = mp->out;
    int64_t bh = index / job->row_blocks, row0 = index % job->row_blocks * MERGE_ROWS;
    int64_t b = bh / out->heads, h = bh % out->heads, dv = out->dim;
    int64_t rows = out->seq - row0 < MERGE_ROWS ? out->seq - row0 : MERGE_ROWS;
    FA_T *acc = fa_arena_alloc(arena, (size_t)dv * sizeof(FA_T));
    for (int64_t i = row0; i < row0 + rows; i++) {
        int64_t at = (b * out->heads + h) * out->seq + i; /* this row in every lse */
        FA_T m = -(FA_T)INFINITY;
        for (int k = 0; k < mp->n; k++) {
            FA_T l = ((const FA_T *)mp->lses[k])[at];
            if (l > m || l != l) m = l;
        }
        FA_T sum = 0;
        for (int64_t y = 0; y < dv; y++) acc[y] = 0;
        if (m != -(FA_T)INFINITY) {
            for (int k = 0; k < mp->n; k++) {
                FA_T l = ((const FA_T *)mp->lses[k])[at];
                if (l == -(FA_T)INFINITY) continue;
                FA_T w = FA_EXP(l - m);
                const FA_T *part = (const FA_T *)mp->outs[k].data + b * mp->outs[k].stride_batch +
                                   h * mp->outs[k].stride_head + i * mp->outs[k].stride_seq;
                sum += w;
                for (int64_t y = 0; y < dv; y++) acc[y] += w * part[y];
            }
        }
        FA_T *o = (FA_T *)out->data + b * out->stride_batch + h * out->stride_head + i * out->stride_seq;
        for (int64_t y = 0; y < dv; y++) o[y] = sum == 0 ? 0 : acc[y] / sum;
        if (mp->lse) ((FA_T *)mp->lse)[at] = sum == 0 ? -(FA_T)INFINITY : m + FA_LOG(sum);
    }
}

#undef FA_NAME
#undef FA_CAT
#undef FA_CAT2
