/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX-512 tile kernels, written once for both element types. Included by avx512_f32.c and
 * avx512_f64.c, which define the vector vocabulary first:
 *   FA_T, FA_SFX, FA_LANES, vec, mask, V_LOAD, V_LOADU_MASKZ, V_STORE, V_STOREU, V_STOREU_MASK,
 *   V_SET1, V_ZERO, V_FMA, V_ADD, V_SUB, V_MUL, V_MAX, V_MASKZ_SCALEF, V_MASKZ_ROUND, V_MASKZ_SUB,
 *   V_MASK_BLEND, V_CMP, V_REDUCE_ADD,
 *   FA_EXP2_LOW (log2 of the smallest normal: exp2 below it is flushed to +0), FA_EXP2_COEF and
 *   FA_EXP2_DEGREE (the polynomial of kernels/exp2_poly.h for this type).
 *
 * Layouts are those of kernels/kernels.h: score tiles transposed (a vector = FA_LANES query rows),
 * ld a multiple of the 64-byte padding unit (FA_PAD_ELEMS_*), here exactly FA_LANES: one vector. */

#define FA_CAT2(a, b) a##b
#define FA_CAT(a, b) FA_CAT2(a, b)
#define FA_NAME(n) FA_CAT(n, FA_SFX)
#define FA_INLINE static inline __attribute__((always_inline))

/* 2^f on |f| <= 1/2: the shared coefficients (kernels/exp2_poly.h), Horner from the top. f·p, not
 * p·f (the same bits): with f from a zero-masked subtraction gcc 12 otherwise copies p between
 * registers at every step. */
FA_INLINE vec FA_NAME(exp2_poly_)(vec f)
{
    vec p = V_SET1(FA_EXP2_COEF[FA_EXP2_DEGREE]);
    for (int i = FA_EXP2_DEGREE - 1; i >= 0; i--) p = V_FMA(f, p, V_SET1(FA_EXP2_COEF[i]));
    return p;
}
#define FA_EXP2_POLY(f) FA_NAME(exp2_poly_)(f)

/* Every lane of a vector. */
#define FA_ALL_LANES ((mask)((1u << FA_LANES) - 1u))

/* Lanes [0, n) of a vector; n may be <= 0 (no lane) or >= FA_LANES (every lane). */
FA_INLINE mask FA_NAME(tail_mask_)(int64_t n)
{
    if (n <= 0) return 0;
    if (n >= FA_LANES) return FA_ALL_LANES;
    return (mask)((1u << (unsigned)n) - 1u);
}

/* exp(d) for d = s - m <= 0 (a max already subtracted), as exp2(d·log2 e). */
FA_INLINE vec FA_NAME(exp2_)(vec x);
FA_INLINE vec FA_NAME(exp_of_difference_)(vec d)
{
    return FA_NAME(exp2_)(V_MUL(d, V_SET1((FA_T)1.44269504088896340735992468100189214)));
}

/* exp2(x), branch-free: x = n + f with n an integer and |f| <= 1/2, 2^f from a polynomial and 2^n
 * applied exactly by scalef. x = -inf (a masked score) gives exactly 0, exp2(0) exactly 1, NaN
 * stays NaN.
 *
 * Subnormal results are flushed: every x below FA_EXP2_LOW (log2 of the smallest normal, -126 or
 * -1022) gives exactly +0, every x at or above it a normal number. On Intel cores every FMA that
 * reads a subnormal costs about 30x (q, k, v from U(-10, 10) made an f32 forward 15x slower on a
 * Xeon), and next to the row's largest term (1) such a probability is below the sum's rounding
 * anyway. Flushing here rather than setting FTZ/DAZ in MXCSR leaves the caller's subnormal inputs
 * to IEEE arithmetic, needs no save and restore around the team's work, and gives the same bits on
 * every thread whatever MXCSR it runs with.
 *
 * It costs nothing on the FMA ports: the compare that decides the flush replaces the clamp that
 * used to keep -inf out of the polynomial, and its mask zero-masks the rounding, the subtraction
 * and scalef, which EVEX encodes for free. Flushed lanes then see n = f = 0, so none computes a
 * NaN or a subnormal. The compare is true for NaN, so NaN passes. (On Zen 4 the masked rounding
 * and subtraction make this loop about 5% slower than unmasked ones, under 0.1% of a D = 128
 * forward; unmasked, a -inf lane would compute -inf - -inf, raising FE_INVALID, and the masked
 * lanes of scalef would underflow.) */
FA_INLINE vec FA_NAME(exp2_)(vec x)
{
    mask keep = V_CMP(x, V_SET1(FA_EXP2_LOW), _CMP_NLT_UQ);
    vec n = V_MASKZ_ROUND(keep, x);
    vec f = V_MASKZ_SUB(keep, x, n);
    return V_MASKZ_SCALEF(keep, FA_EXP2_POLY(f), n);
}

/* ---- S = Q·Kᵀ, transposed (kernels/tile_scores.h) ----
 * A 4 × 4 block: 16 accumulators + 4 query vectors + 1 broadcast of the 32 registers. Tiles of at
 * most 4 rows: 8 keys a block for 1-2 rows, 4 for 3-4 (8 to 16 independent FMA chains). */
#define FA_SCORES_KEYS 4
#define FA_SCORES_VECS 4
#define V_LOAD_PART(p, n) V_LOADU_MASKZ(FA_NAME(tail_mask_)(n), (p))
#define FA_FEW_ROWS_KEYS(rows) ((rows) <= 2 ? 8 : 4)
#include "kernels/tile_scores.h"

/* ---- online softmax over a transposed tile: one vector = FA_LANES query rows ---- */
static void FA_NAME(avx512_online_softmax_)(int64_t rows, int64_t ld, int64_t cols, FA_T *s, FA_T *row_max,
                                            FA_T *row_sum, FA_T *acc, int64_t acc_stride, int64_t acc_width)
{
    const vec neg_inf = V_SET1(-(FA_T)INFINITY), one = V_SET1((FA_T)1);
    for (int64_t r = 0; r < ld; r += FA_LANES) {
        /* The running max must become NaN if any score is NaN: V_MAX alone would drop it. */
        vec m_old = V_LOAD(row_max + r), m_new = m_old;
        mask nan = V_CMP(m_old, m_old, _CMP_UNORD_Q); /* a row already NaN stays NaN */
        for (int64_t c = 0; c < cols; c++) {
            vec x = V_LOAD(s + c * ld + r);
            m_new = V_MAX(m_new, x);
            nan |= V_CMP(x, x, _CMP_UNORD_Q);
        }
        m_new = V_MASK_BLEND(nan, m_new, V_SET1((FA_T)NAN));
        /* Rows whose max is still -inf have seen no key: p = 0, alpha = 1 (exp2(-inf + inf) is NaN).
         * Their scores are all -inf, so subtracting +inf instead of their max gives -inf, which exp2
         * flushes to 0: no mask in the loop below. */
        mask live = V_CMP(m_new, neg_inf, _CMP_NEQ_UQ);
        vec m_sub = V_MASK_BLEND(live, V_SET1((FA_T)INFINITY), m_new);
        vec sum = V_ZERO();
        for (int64_t c = 0; c < cols; c++) {
            vec p = FA_NAME(exp_of_difference_)(V_SUB(V_LOAD(s + c * ld + r), m_sub));
            V_STORE(s + c * ld + r, p);
            sum = V_ADD(sum, p);
        }
        vec alpha = V_MASK_BLEND(live, one, FA_NAME(exp_of_difference_)(V_SUB(m_old, m_new)));
        V_STORE(row_sum + r, V_FMA(alpha, V_LOAD(row_sum + r), sum));
        V_STORE(row_max + r, m_new);
        /* Lazy rescaling: only rows whose max rose (alpha != 1) touch their accumulator. */
        mask rescale = V_CMP(alpha, one, _CMP_NEQ_UQ) & FA_NAME(tail_mask_)(rows - r);
        if (!rescale) continue;
        _Alignas(64) FA_T a[FA_LANES]; /* V_STORE is an aligned store */
        V_STORE(a, alpha);
        for (int i = 0; i < FA_LANES; i++) {
            if (!((rescale >> i) & 1)) continue;
            FA_T *ar = acc + (r + i) * acc_stride;
            vec w = V_SET1(a[i]);
            for (int64_t y = 0; y < acc_width; y += FA_LANES) V_STORE(ar + y, V_MUL(V_LOAD(ar + y), w));
        }
    }
}

/* ---- acc[i][0..dim) += sum_t w[i·wi + t·wt] · x[t][0..dim) ----
 * One microkernel for both products: accumulate (i = query row, t = key: wi = 1, wt = ld) and
 * accumulate_t (i = key, t = query row: wi = ld, wt = 1). Register block: NI accumulator rows ×
 * NV vectors; per reduction step NV loads of x (the last one masked to dim) and NI broadcasts. The
 * accumulator's last vector is loaded and stored under the same mask: nothing past dim is touched, so
 * acc may be a caller's row-major output (the backward's dQ) at any row stride. */
FA_INLINE void FA_NAME(weighted_rows_block_)(int ni, int nv, int64_t steps, const FA_T *w, int64_t wi, int64_t wt,
                                             const FA_T *x, int64_t x_stride, mask last, FA_T *acc,
                                             int64_t acc_stride, int prefetch)
{
    vec a[4][8];
    for (int i = 0; i < ni; i++)
        for (int j = 0; j < nv; j++)
            a[i][j] = V_LOADU_MASKZ(j == nv - 1 ? last : FA_ALL_LANES, acc + i * acc_stride + j * FA_LANES);
    for (int64_t t = 0; t < steps; t++) {
        /* with few rows each x row is used once, straight from memory: fetch it early */
        if (prefetch && t + 16 < steps)
            for (int j = 0; j < nv; j++) _mm_prefetch((const char *)(x + (t + 16) * x_stride + j * FA_LANES), _MM_HINT_T0);
        vec xv[8];
        for (int j = 0; j < nv; j++)
            xv[j] = j == nv - 1 ? V_LOADU_MASKZ(last, x + t * x_stride + j * FA_LANES)
                                : V_LOADU_MASKZ(FA_ALL_LANES, x + t * x_stride + j * FA_LANES);
        for (int i = 0; i < ni; i++) {
            vec b = V_SET1(w[i * wi + t * wt]);
            for (int j = 0; j < nv; j++) a[i][j] = V_FMA(b, xv[j], a[i][j]);
        }
    }
    for (int i = 0; i < ni; i++)
        for (int j = 0; j < nv; j++)
            V_STOREU_MASK(acc + i * acc_stride + j * FA_LANES, j == nv - 1 ? last : FA_ALL_LANES, a[i][j]);
}

#define FA_ROWS_CASE(NI, NV)                                                                                   \
    case (NI) * 16 + (NV):                                                                                      \
        FA_NAME(weighted_rows_block_)(NI, NV, steps, wb, wi, wt, xb, x_stride, last, ab, acc_stride, few);     \
        break;

static void FA_NAME(weighted_rows_)(int64_t n, int64_t steps, int64_t dim, const FA_T *w, int64_t wi, int64_t wt,
                                    const FA_T *x, int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    int few = n <= FA_FEW_ROWS;
    /* 1-2 accumulator rows: a whole 8-vector x row per pass, so each x row is streamed once, in order */
    int64_t chunk = (n <= 2 ? 8 : 4) * FA_LANES;
    for (int64_t y = 0; y < dim; y += chunk) {
        int64_t width = dim - y < chunk ? dim - y : chunk;
        int nv = (int)((width + FA_LANES - 1) / FA_LANES);
        mask last = FA_NAME(tail_mask_)(width - (nv - 1) * FA_LANES);
        for (int64_t i = 0; i < n; i += 4) {
            int ni = n - i < 4 ? (int)(n - i) : 4;
            const FA_T *wb = w + i * wi, *xb = x + y;
            FA_T *ab = acc + i * acc_stride + y;
            switch (ni * 16 + nv) {
                FA_ROWS_CASE(1, 1) FA_ROWS_CASE(1, 2) FA_ROWS_CASE(1, 3) FA_ROWS_CASE(1, 4)
                FA_ROWS_CASE(2, 1) FA_ROWS_CASE(2, 2) FA_ROWS_CASE(2, 3) FA_ROWS_CASE(2, 4)
                FA_ROWS_CASE(3, 1) FA_ROWS_CASE(3, 2) FA_ROWS_CASE(3, 3) FA_ROWS_CASE(3, 4)
                FA_ROWS_CASE(4, 1) FA_ROWS_CASE(4, 2) FA_ROWS_CASE(4, 3) FA_ROWS_CASE(4, 4)
                FA_ROWS_CASE(1, 5) FA_ROWS_CASE(1, 6) FA_ROWS_CASE(1, 7) FA_ROWS_CASE(1, 8)
                FA_ROWS_CASE(2, 5) FA_ROWS_CASE(2, 6) FA_ROWS_CASE(2, 7) FA_ROWS_CASE(2, 8)
            default: break;
            }
        }
    }
}
#undef FA_ROWS_CASE

static void FA_NAME(avx512_accumulate_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p, int64_t ld,
                                        const FA_T *x, int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    FA_NAME(weighted_rows_)(rows, cols, dim, p, 1, ld, x, x_stride, acc, acc_stride);
}

static void FA_NAME(avx512_accumulate_t_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p, int64_t ld,
                                          const FA_T *x, int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    FA_NAME(weighted_rows_)(cols, rows, dim, p, ld, 1, x, x_stride, acc, acc_stride);
}

static void FA_NAME(avx512_probabilities_)(int64_t ld, int64_t cols, FA_T *s, const FA_T *lse)
{
    const vec neg_inf = V_SET1(-(FA_T)INFINITY);
    for (int64_t r = 0; r < ld; r += FA_LANES) {
        vec l = V_LOAD(lse + r);
        /* Rows that saw no key (lse -inf, every score -inf) give 0, not NaN: they subtract +inf,
         * and exp2 flushes the -inf that leaves (as in the online softmax). */
        l = V_MASK_BLEND(V_CMP(l, neg_inf, _CMP_NEQ_UQ), V_SET1((FA_T)INFINITY), l);
        for (int64_t c = 0; c < cols; c++)
            V_STORE(s + c * ld + r, FA_NAME(exp_of_difference_)(V_SUB(V_LOAD(s + c * ld + r), l)));
    }
}

static void FA_NAME(avx512_score_grad_)(int64_t ld, int64_t cols, const FA_T *p, FA_T *dp, const FA_T *delta)
{
    for (int64_t r = 0; r < ld; r += FA_LANES) {
        vec d = V_LOAD(delta + r);
        for (int64_t c = 0; c < cols; c++)
            V_STORE(dp + c * ld + r, V_MUL(V_LOAD(p + c * ld + r), V_SUB(V_LOAD(dp + c * ld + r), d)));
    }
}

/* ---- softcap, ALiBi and bias (kernels/score_mods.h) ---- */
typedef mask vmask;
#define V_SELECT(m, a, b) V_MASK_BLEND((m), (a), (b))
#define V_LANES_BELOW(n) FA_NAME(tail_mask_)(n)
#include "kernels/score_mods.h"

/* This element type's half of the AVX-512 table. */
const FA_CAT(fa_kernels_, FA_SFX) FA_NAME(fa_avx512_kernels_) = {
    .traits = {.input = sizeof(FA_T) == 4 ? FA_F32 : FA_F64,
               .accum = sizeof(FA_T) == 4 ? FA_F32 : FA_F64,
               .lanes = FA_LANES,
               .pad_elems = FA_LANES, /* one vector is 64 bytes */
               .scores_keys = FA_SCORES_KEYS,
               .scores_vecs = FA_SCORES_VECS,
               .rows_rows = 4, /* weighted_rows_: 4 rows × up to 4 vectors, 1-2 rows × up to 8 */
               .rows_vecs = 4,
               .score_tile = FA_TILE_KEY_MAJOR},
    .scores = FA_NAME(tile_scores_),
    .online_softmax = FA_NAME(avx512_online_softmax_),
    .accumulate = FA_NAME(avx512_accumulate_),
    .accumulate_t = FA_NAME(avx512_accumulate_t_),
    .probabilities = FA_NAME(avx512_probabilities_),
    .score_grad = FA_NAME(avx512_score_grad_),
    .modify = FA_NAME(modify_),
    .scale_grad = FA_NAME(scale_grad_)};

/* For the tests: exp2 of n values, as the kernels compute it (n a multiple of FA_LANES). */
void FA_NAME(fa_avx512_exp2_)(const FA_T *x, FA_T *y, int64_t n)
{
    for (int64_t i = 0; i < n; i += FA_LANES) V_STOREU(y + i, FA_NAME(exp2_)(V_LOADU_MASKZ(FA_ALL_LANES, x + i)));
}

#if FA_TANH_VECTOR
/* For the tests: the softcap's tanh of n values, as the kernels compute it (n a multiple of FA_LANES). */
void FA_NAME(fa_avx512_tanh_)(const FA_T *x, FA_T *y, int64_t n)
{
    for (int64_t i = 0; i < n; i += FA_LANES) V_STOREU(y + i, FA_NAME(tanh_)(V_LOADU(x + i)));
}
#endif

#undef V_SELECT
#undef V_LANES_BELOW
#undef FA_ALL_LANES
#undef FA_FEW_ROWS
#undef FA_PREFETCH_KEYS
#undef FA_FEW_ROWS_KEYS
#undef V_LOAD_PART
#undef FA_SCORES_KEYS
#undef FA_SCORES_VECS
#undef FA_EXP2_POLY
#undef FA_INLINE
#undef FA_NAME
#undef FA_CAT
#undef FA_CAT2
