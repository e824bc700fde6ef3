/* Portable tile kernels, written once for both element types: included by ref_kernels.c with
 * FA_T (element type), FA_SFX (name suffix) and FA_EXP (exp of that type) defined.
 * Plain loops that the compiler vectorizes (`omp simd`); every reduction order is fixed by the
 * code, so the result depends on the problem and the build only. */

#define FA_CAT2(a, b) a##b
#define FA_CAT(a, b) FA_CAT2(a, b)
#define FA_NAME(n) FA_CAT(n, FA_SFX)

static void FA_NAME(ref_scores_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *q, int64_t q_stride,
                                 const FA_T *k, int64_t k_stride, FA_T *s, int64_t s_stride)
{
    for (int64_t r = 0; r < rows; r++) {
        const FA_T *qr = q + r * q_stride;
        for (int64_t c = 0; c < cols; c++) {
            const FA_T *kc = k + c * k_stride;
            FA_T dot = 0;
#pragma omp simd reduction(+ : dot)
            for (int64_t x = 0; x < dim; x++) dot += qr[x] * kc[x];
            s[r * s_stride + c] = dot;
        }
    }
}

static void FA_NAME(ref_online_softmax_)(int64_t rows, int64_t cols, FA_T *s, int64_t s_stride, FA_T *row_max,
                                         FA_T *row_sum, FA_T *acc, int64_t acc_stride, int64_t dim_v)
{
    for (int64_t r = 0; r < rows; r++) {
        FA_T *sr = s + r * s_stride;
        FA_T m_old = row_max[r];
        FA_T m_new = m_old;
        /* NaN must win the max, so a row that sees a NaN score ends as NaN, not as a masked row. */
        for (int64_t c = 0; c < cols; c++)
            if (sr[c] > m_new || sr[c] != sr[c]) m_new = sr[c];
        if (m_new == -(FA_T)INFINITY) {
            /* Every score so far is masked: exp(-inf - -inf) would be NaN, and p must be 0. */
            for (int64_t c = 0; c < cols; c++) sr[c] = 0;
            continue;
        }
        FA_T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t c = 0; c < cols; c++) {
            sr[c] = FA_EXP(sr[c] - m_new);
            sum += sr[c];
        }
        FA_T alpha = FA_EXP(m_old - m_new); /* 0 when m_old = -inf; exactly 1 when the max held */
        row_sum[r] = alpha * row_sum[r] + sum;
        row_max[r] = m_new;
        if (alpha != (FA_T)1) {
            FA_T *ar = acc + r * acc_stride;
#pragma omp simd
            for (int64_t y = 0; y < dim_v; y++) ar[y] *= alpha;
        }
    }
}

static void FA_NAME(ref_accumulate_)(int64_t rows, int64_t cols, int64_t dim_v, const FA_T *p, int64_t p_stride,
                                     const FA_T *v, int64_t v_stride, FA_T *acc, int64_t acc_stride)
{
    for (int64_t r = 0; r < rows; r++) {
        FA_T *ar = acc + r * acc_stride;
        for (int64_t c = 0; c < cols; c++) {
            FA_T w = p[r * p_stride + c];
            const FA_T *vc = v + c * v_stride;
#pragma omp simd
            for (int64_t y = 0; y < dim_v; y++) ar[y] += w * vc[y];
        }
    }
}

static void FA_NAME(ref_accumulate_t_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p, int64_t p_stride,
                                       const FA_T *x, int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    for (int64_t r = 0; r < rows; r++) {
        const FA_T *xr = x + r * x_stride;
        for (int64_t c = 0; c < cols; c++) {
            FA_T w = p[r * p_stride + c];
            FA_T *ac = acc + c * acc_stride;
#pragma omp simd
            for (int64_t y = 0; y < dim; y++) ac[y] += w * xr[y];
        }
    }
}

static void FA_NAME(ref_probabilities_)(int64_t rows, int64_t cols, FA_T *s, int64_t s_stride, const FA_T *lse)
{
    for (int64_t r = 0; r < rows; r++) {
        FA_T *sr = s + r * s_stride;
        FA_T l = lse[r];
        if (l == -(FA_T)INFINITY) {
            for (int64_t c = 0; c < cols; c++) sr[c] = 0;
            continue;
        }
#pragma omp simd
        for (int64_t c = 0; c < cols; c++) sr[c] = FA_EXP(sr[c] - l);
    }
}

static void FA_NAME(ref_score_grad_)(int64_t rows, int64_t cols, const FA_T *p, int64_t p_stride, FA_T *dp,
                                     int64_t dp_stride, const FA_T *delta)
{
    for (int64_t r = 0; r < rows; r++) {
        const FA_T *pr = p + r * p_stride;
        FA_T *dr = dp + r * dp_stride;
        FA_T d = delta[r];
#pragma omp simd
        for (int64_t c = 0; c < cols; c++) dr[c] = pr[c] * (dr[c] - d);
    }
}

#undef FA_NAME
#undef FA_CAT
#undef FA_CAT2
