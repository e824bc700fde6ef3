/* SPDX-License-Identifier: BSD-3-Clause */
/* ref's dropout operations (kernels.h, dropout_probs and dropout_score_grad), written once for both
 * element types: included by ref_tiles.h with FA_T and FA_SFX defined. The generator runs over
 * FA_PHILOX_LANES rows at a time (fa_philox_lanes), in loops compilers vectorize across the lanes. */

/* The 4 words of rows i.. of key group g: x[w][l] for lane l (keys 8g + 2w and 8g + 2w + 1). */
#define FA_REF_LANES(g, i) \
    fa_philox_lanes(st->stream[0], st->stream[1], (uint32_t)(g), (uint32_t)(i), st->key, x)

static void FA_NAME(ref_dropout_probs_)(const fa_dropout_stream *st, int64_t i0, int64_t rows, int64_t j0,
                                        int64_t cols, FA_T kept, FA_T *s, int64_t ld)
{
    uint32_t x[4][FA_PHILOX_LANES];
    FA_DROPOUT_WALK(i0, rows, j0, cols, FA_REF_LANES, {
        FA_T *col = s + c * ld + r0;
        if (n == FA_PHILOX_LANES) /* a constant trip count: vectorized */
            for (int l = 0; l < FA_PHILOX_LANES; l++)
                col[l] *= fa_dropout_kept(st, x[e >> 1][l], e) ? kept : (FA_T)0;
        else
            for (int l = 0; l < n; l++) col[l] *= fa_dropout_kept(st, x[e >> 1][l], e) ? kept : (FA_T)0;
    })
}

static void FA_NAME(ref_dropout_score_grad_)(const fa_dropout_stream *st, int64_t i0, int64_t rows,
                                             int64_t j0, int64_t cols, FA_T kept, FA_T *pt, FA_T *ds,
                                             const FA_T *delta, int64_t ld)
{
    uint32_t x[4][FA_PHILOX_LANES];
    FA_DROPOUT_WALK(i0, rows, j0, cols, FA_REF_LANES, {
        FA_T *pc = pt + c * ld + r0, *dc = ds + c * ld + r0;
        for (int l = 0; l < n; l++) {
            const FA_T m = fa_dropout_kept(st, x[e >> 1][l], e) ? kept : (FA_T)0;
            dc[l] = pc[l] * (dc[l] * m - delta[r0 + l]);
            pc[l] *= m;
        }
    })
    for (int64_t c = 0; c < cols; c++) /* the padding rows, as score_grad computes them */
        for (int64_t r = rows; r < ld; r++) ds[c * ld + r] = pt[c * ld + r] * (ds[c * ld + r] - delta[r]);
}

#undef FA_REF_LANES
