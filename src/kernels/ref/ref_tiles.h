/* SPDX-License-Identifier: BSD-3-Clause */
/* Portable tile kernels, written once for both element types: included by ref_kernels.c with
 * FA_T (element type), FA_SFX (name suffix), FA_EXP (exp of that type, with results below the
 * smallest normal flushed to +0) and FA_TANH (tanh of that type) defined.
 * Plain loops over query rows (the contiguous axis of a transposed score tile), which the
 * compiler vectorizes; every reduction order is fixed by the code. */

#include "template.h"

/* The rows [0, extent) of the tile; scores takes the padding rows too (extent ld), so that its loop
 * stays one simple vector loop, scores_rows only its rows. */
static void FA_NAME(ref_scores_span_)(int64_t extent, int64_t ld, int64_t cols, int64_t dim, const FA_T *qt,
                                      const FA_T *k, int64_t k_stride, FA_T *s)
{
    for (int64_t c = 0; c < cols; c++) {
        FA_T *sc = s + c * ld;
        const FA_T *kc = k + c * k_stride;
        for (int64_t r = 0; r < extent; r++) sc[r] = 0;
        for (int64_t x = 0; x < dim; x++) {
            FA_T w = kc[x];
            const FA_T *qx = qt + x * ld;
#pragma omp simd
            for (int64_t r = 0; r < extent; r++) sc[r] += qx[r] * w;
        }
    }
}

static void FA_NAME(ref_scores_)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const FA_T *qt,
                                 const FA_T *k, int64_t k_stride, FA_T *s)
{
    (void)rows;
    FA_NAME(ref_scores_span_)(ld, ld, cols, dim, qt, k, k_stride, s);
}

static void FA_NAME(ref_scores_rows_)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const FA_T *qt,
                                      const FA_T *k, int64_t k_stride, FA_T *s)
{
    FA_NAME(ref_scores_span_)(rows, ld, cols, dim, qt, k, k_stride, s);
}

/* Element y of accumulator row r is at acc + r·acc_stride + y·acc_step: rows (acc_step 1) for the
 * float sets, transposed (acc_stride 1, acc_step ld) for the bf16 set's online_softmax_pairs, whose s
 * holds raw scores, the scores being scale·s (scale 1 for the float sets: the same operations). */
static void FA_NAME(ref_online_softmax_strided_)(int64_t rows, int64_t ld, int64_t cols, FA_T scale, FA_T *s,
                                                 FA_T *row_max, FA_T *row_sum, FA_T *acc, int64_t acc_stride,
                                                 int64_t acc_step, int64_t acc_width)
{
    for (int64_t r = 0; r < ld; r++) {
        FA_T m_old = row_max[r], m_new = m_old;
        /* NaN must win the max, so a row that sees a NaN score ends as NaN, not as a masked row. */
        for (int64_t c = 0; c < cols; c++) {
            FA_T v = scale * s[c * ld + r];
            if (v > m_new || v != v) m_new = v;
        }
        if (m_new == -(FA_T)INFINITY) {
            /* Every score so far is masked: exp(-inf - -inf) would be NaN, and p must be 0. */
            for (int64_t c = 0; c < cols; c++) s[c * ld + r] = 0;
            continue;
        }
        FA_T sum = 0;
        for (int64_t c = 0; c < cols; c++) {
            FA_T p = FA_EXP(scale * s[c * ld + r] - m_new);
            s[c * ld + r] = p;
            sum += p;
        }
        FA_T alpha = FA_EXP(m_old - m_new); /* 0 when m_old = -inf; exactly 1 when the max held */
        row_sum[r] = alpha * row_sum[r] + sum;
        row_max[r] = m_new;
        if (alpha != (FA_T)1 && r < rows) {
            FA_T *ar = acc + r * acc_stride;
            for (int64_t y = 0; y < acc_width; y++) ar[y * acc_step] *= alpha;
        }
    }
}

static void FA_NAME(ref_online_softmax_)(int64_t rows, int64_t ld, int64_t cols, FA_T *s, FA_T *row_max,
                                         FA_T *row_sum, FA_T *acc, int64_t acc_stride, int64_t acc_width)
{
    FA_NAME(ref_online_softmax_strided_)
    (rows, ld, cols, 1, s, row_max, row_sum, acc, acc_stride, 1, acc_width);
}

static void FA_NAME(ref_accumulate_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p, int64_t ld,
                                     const FA_T *x, int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    for (int64_t r = 0; r < rows; r++) {
        FA_T *ar = acc + r * acc_stride;
        for (int64_t c = 0; c < cols; c++) {
            FA_T w = p[c * ld + r];
            const FA_T *xc = x + c * x_stride;
#pragma omp simd
            for (int64_t y = 0; y < dim; y++) ar[y] += w * xc[y];
        }
    }
}

static void FA_NAME(ref_accumulate_t_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p, int64_t ld,
                                       const FA_T *x, int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    for (int64_t c = 0; c < cols; c++) {
        FA_T *ac = acc + c * acc_stride;
        for (int64_t r = 0; r < rows; r++) {
            FA_T w = p[c * ld + r];
            const FA_T *xr = x + r * x_stride;
#pragma omp simd
            for (int64_t y = 0; y < dim; y++) ac[y] += w * xr[y];
        }
    }
}

static void FA_NAME(ref_probabilities_)(int64_t ld, int64_t cols, FA_T *s, const FA_T *lse)
{
    for (int64_t c = 0; c < cols; c++) {
        FA_T *sc = s + c * ld;
        for (int64_t r = 0; r < ld; r++) sc[r] = lse[r] == -(FA_T)INFINITY ? (FA_T)0 : FA_EXP(sc[r] - lse[r]);
    }
}

static void FA_NAME(ref_score_grad_)(int64_t ld, int64_t cols, const FA_T *p, FA_T *dp, const FA_T *delta)
{
    for (int64_t c = 0; c < cols; c++) {
#pragma omp simd
        for (int64_t r = 0; r < ld; r++) dp[c * ld + r] = p[c * ld + r] * (dp[c * ld + r] - delta[r]);
    }
}

/* The modifiers one after the other over each column, as kernels.h states them. The ALiBi product
 * is its own statement, so that no compiler contracts it into the subtraction (an FMA would round
 * once where the x86 tables round twice; with softcap off every table gives these bits). */
static void FA_NAME(ref_modify_)(const fa_score_mods *m, int64_t ld, int64_t cols, FA_T *s, FA_T *dcap)
{
    const FA_T cap = (FA_T)m->softcap, slope = (FA_T)m->alibi_slope;
    const FA_T *bias = (const FA_T *)m->bias;
    for (int64_t c = 0; c < cols; c++) {
        FA_T *sc = s + c * ld;
        if (m->softcap > 0)
            for (int64_t r = 0; r < ld; r++) {
                FA_T t = FA_TANH(sc[r] / cap);
                sc[r] = cap * t;
                if (dcap) dcap[c * ld + r] = 1 - t * t;
            }
        if (m->alibi_slope != 0) {
            int64_t d0 = m->alibi_dist0 - c;
#pragma omp simd
            for (int64_t r = 0; r < ld; r++) {
                int64_t d = d0 + r; /* an exact integer distance, whatever the tile */
                FA_T term = slope * (FA_T)(d < 0 ? -d : d);
                sc[r] -= term;
            }
        }
        if (bias) {
            const FA_T *bc = bias + c;
            int64_t stride = m->bias_stride;
#pragma omp simd
            for (int64_t r = 0; r < m->bias_rows; r++) sc[r] += bc[r * stride];
        }
    }
}

static void FA_NAME(ref_scale_grad_)(int64_t ld, int64_t cols, FA_T *ds, const FA_T *dcap)
{
#pragma omp simd
    for (int64_t x = 0; x < ld * cols; x++) ds[x] *= dcap[x];
}

static void FA_NAME(ref_widen_)(int64_t rows, int64_t dim, const void *src, int64_t src_stride, fa_dtype from,
                                const float *scale, int64_t scale_stride, FA_T *dst, int64_t dst_stride)
{
    const int64_t elem = fa_stored_size(from);
    for (int64_t r = 0; r < rows; r++) {
        const char *row = (const char *)src + r * src_stride * elem;
        const float *sr = scale ? scale + r * scale_stride : NULL;
        for (int64_t x = 0; x < dim; x++) dst[r * dst_stride + x] = (FA_T)fa_stored_value(from, row, x, sr);
    }
}

/* scores and accumulate over stored rows (key c at rows[c]): the same operations in the same order,
 * each element converted (and scaled) as it is read, so the same bits as on the widened rows. The
 * set's own type (FA_F32 in float, FA_F64 in double) is read as it is. */
static FA_T FA_NAME(ref_stored_)(fa_dtype t, const void *row, int64_t x, const float *scale)
{
    if (t == FA_F32) return (FA_T)((const float *)row)[x];
    if (t == FA_F64) return (FA_T)((const double *)row)[x];
    return (FA_T)fa_stored_value(t, row, x, scale);
}

static void FA_NAME(ref_scores_stored_)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const FA_T *q,
                                        int64_t q_stride, const void *const *k_rows, fa_dtype kt,
                                        const float *scale, fa_rows_prefetch prefetch, FA_T *s)
{
    (void)prefetch; /* no prefetches: the portable reference */
    for (int64_t c = 0; c < cols; c++) {
        FA_T *sc = s + c * ld;
        const float *scale_c = scale ? scale + c : NULL;
        for (int64_t r = 0; r < rows; r++) sc[r] = 0; /* padding rows are left (kernels.h) */
        for (int64_t x = 0; x < dim; x++) {
            FA_T w = FA_NAME(ref_stored_)(kt, k_rows[c], x, scale_c);
            for (int64_t r = 0; r < rows; r++) sc[r] += q[r * q_stride + x] * w;
        }
    }
}

static void FA_NAME(ref_accumulate_stored_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p,
                                            int64_t ld, const void *const *x_rows, fa_dtype xt,
                                            const float *scale, fa_rows_prefetch prefetch, FA_T *acc,
                                            int64_t acc_stride)
{
    (void)prefetch;
    for (int64_t r = 0; r < rows; r++) {
        FA_T *ar = acc + r * acc_stride;
        for (int64_t c = 0; c < cols; c++) {
            FA_T w = p[c * ld + r];
            const float *scale_c = scale ? scale + c : NULL;
            for (int64_t y = 0; y < dim; y++) ar[y] += w * FA_NAME(ref_stored_)(xt, x_rows[c], y, scale_c);
        }
    }
}

#include "kernels/ref/ref_dropout.h"
