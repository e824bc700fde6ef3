/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX2+FMA tile kernels, written once for both element types. Included by avx2_f32.c and
 * avx2_f64.c, which define the vector vocabulary first:
 *   FA_T, FA_SFX, FA_LANES (of a 256-bit vector), vec, V_LOAD, V_LOADU, V_MASKLOAD, V_STORE,
 *   V_STOREU, V_MASKSTORE, V_SET1, V_ZERO, V_FMA, V_ADD, V_SUB, V_MUL, V_MAX, V_MIN, V_AND, V_OR,
 *   V_BLENDV, V_CMP, V_MOVEMASK, V_REDUCE_ADD, V_TAIL(n) (a lane mask for maskload/maskstore),
 *   FA_EXP2_SHIFT and
 *   V_POW2_OF_SHIFTED(t) (n = round(x) and 2^n from t = x + FA_EXP2_SHIFT), FA_EXP2_LOW,
 *   FA_EXP2_HIGH, FA_EXP2_COEF and FA_EXP2_DEGREE (the polynomial of kernels/exp2_poly.h).
 *
 * Layouts are those of kernels/kernels.h: score tiles transposed (a vector = FA_LANES query rows),
 * ld a multiple of the 64-byte padding unit FA_LINE = 2 vectors, accumulators padded likewise.
 * AVX2 has 16 vector registers (AVX-512: 32), so the register blocks are smaller than avx512's. */

#define FA_CAT2(a, b) a##b
#define FA_CAT(a, b)  FA_CAT2(a, b)
#define FA_NAME(n)    FA_CAT(n, FA_SFX)
#define FA_INLINE     static inline __attribute__((always_inline))

/* 2^f on |f| <= 1/2: the shared coefficients (kernels/exp2_poly.h), Horner from the top. */
FA_INLINE vec FA_NAME(exp2_poly_)(vec f)
{
    vec p = V_SET1(FA_EXP2_COEF[FA_EXP2_DEGREE]);
    for (int i = FA_EXP2_DEGREE - 1; i >= 0; i--) p = V_FMA(p, f, V_SET1(FA_EXP2_COEF[i]));
    return p;
}
#define FA_EXP2_POLY(f) FA_NAME(exp2_poly_)(f)

/* Elements in 64 bytes (FA_PAD_ELEMS_F32 / FA_PAD_ELEMS_F64 of kernels.h): two vectors. */
#define FA_LINE (2 * FA_LANES)

/* Register blocks (see the kernels below). 6 × 2 measured at or above 4 × 3, 3 × 4, 4 × 2 and the
 * mixes of them, for f32 and f64 at d = 64 and 128; with 2 vectors (one 64-byte unit) the row axis
 * of a score tile (ld) never leaves a remainder, and d = 64 or 128 none either. */
#define FA_SCORES_KEYS 6
#define FA_SCORES_VECS 2
#define FA_ROWS_ROWS 6
#define FA_ROWS_VECS 2

/* exp(d) for d = s - m <= 0 (a max already subtracted), as exp2(d·log2 e). */
FA_INLINE vec FA_NAME(exp2_)(vec x);
FA_INLINE vec FA_NAME(exp_of_difference_)(vec d)
{
    return FA_NAME(exp2_)(V_MUL(d, V_SET1((FA_T)1.44269504088896340735992468100189214)));
}

/* exp2(x), branch-free. AVX2 has neither scalef nor a double -> int64 conversion, so 2^n is built
 * in the exponent field: x is clamped to [FA_EXP2_LOW, FA_EXP2_HIGH] (V_MAX and V_MIN return their
 * second operand when either is NaN, so NaN passes through both and stays NaN), x = n + f with n
 * the nearest integer (found by adding FA_EXP2_SHIFT) and |f| <= 1/2, 2^f from the polynomial,
 * times 2^n. Edges: exp2(-inf) = 0 exactly, exp2(0) = 1 exactly, exp2(+inf) = +inf; x > HIGH - 1/2
 * gives +inf a little early (the kernels' arguments are <= 0).
 *
 * Subnormal results are flushed: every x below FA_EXP2_LOW (log2 of the smallest normal, -126 or
 * -1022) gives exactly +0, every x at or above it a normal number. On Intel cores every FMA that
 * reads a subnormal costs about 30x (q, k, v from U(-10, 10) made an f32 forward 15x slower on a
 * Xeon), and next to the row's largest term (1) such a probability is below the sum's rounding
 * anyway. Flushing here rather than setting FTZ/DAZ in MXCSR leaves the caller's subnormal inputs
 * to IEEE arithmetic, needs no save and restore around the team's work, and gives the same bits on
 * every thread whatever MXCSR it runs with.
 *
 * The flushed lanes' 2^n (2^LOW after the clamp) is masked to +0 before the product, so no lane
 * ever computes a subnormal, and the clamp keeps -inf out of the polynomial. That costs one compare
 * (true for NaN, so NaN passes); the callers pay for it by dropping their mask of the rows that saw
 * no key (they subtract +inf there, and exp2 flushes the -inf that leaves). */
FA_INLINE vec FA_NAME(exp2_)(vec x)
{
    vec keep = V_CMP(x, V_SET1(FA_EXP2_LOW), _CMP_NLT_UQ);
    x = V_MIN(V_SET1(FA_EXP2_HIGH), V_MAX(V_SET1(FA_EXP2_LOW), x));
    vec t = V_ADD(x, V_SET1(FA_EXP2_SHIFT));
    vec n = V_SUB(t, V_SET1(FA_EXP2_SHIFT));
    vec f = V_SUB(x, n);
    return V_MUL(FA_EXP2_POLY(f), V_AND(keep, V_POW2_OF_SHIFTED(t)));
}

/* Bits [0, n) of a line's row mask (n may be <= 0 or >= FA_LINE). */
FA_INLINE unsigned FA_NAME(line_bits_)(int64_t n)
{
    if (n <= 0) return 0;
    return n >= FA_LINE ? (1u << FA_LINE) - 1 : (1u << n) - 1;
}

/* ---- S = Q·Kᵀ, transposed (kernels/tile_scores.h) ----
 * The FA_SCORES_KEYS × FA_SCORES_VECS = 6 × 2 block above: 12 accumulators + 2 query vectors + 1
 * broadcast of the 16 registers. Tiles of at most 4 rows: 8 keys a block for one row, 4 for two, 2
 * for three or four (at most 8 accumulators + 4 query vectors + 1 key vector). */
FA_INLINE vec FA_NAME(load_part_)(const FA_T *p, int64_t n)
{
    return n >= FA_LANES ? V_LOADU(p) : V_MASKLOAD(p, V_TAIL(n));
}
#define V_LOAD_PART(p, n) FA_NAME(load_part_)((p), (n))
#define FA_FEW_ROWS_KEYS(rows) ((rows) == 1 ? 8 : (rows) == 2 ? 4 : 2)
#include "kernels/tile_scores.h"

/* ---- online softmax over a transposed tile, one 64-byte line (two vectors of rows) at a time ----
 * Both vectors of a line go through each column together, so a pass over the tile reads each cache
 * line once (the tile is larger than L1); two columns per step then give four independent max
 * chains, where one chain alone would wait on the max latency at every column. */
static void FA_NAME(avx2_online_softmax_)(int64_t rows, int64_t ld, int64_t cols, FA_T *s, FA_T *row_max,
                                          FA_T *row_sum, FA_T *acc, int64_t acc_stride, int64_t acc_width)
{
    const vec neg_inf = V_SET1(-(FA_T)INFINITY), pos_inf = V_SET1((FA_T)INFINITY), one = V_SET1((FA_T)1),
              nan = V_SET1((FA_T)NAN);
    for (int64_t r = 0; r < ld; r += FA_LINE) {
        FA_T *sr = s + r;
        vec m_old[2], hi[2][2], unord[2], m_new[2], live[2], m_sub[2], sum[2], alpha[2];
        for (int h = 0; h < 2; h++) {
            m_old[h] = V_LOAD(row_max + r + h * FA_LANES);
            hi[h][0] = m_old[h];
            hi[h][1] = neg_inf;
            /* The running max must become NaN if any score (or the old max) is NaN: V_MAX alone
             * would drop it. */
            unord[h] = V_CMP(m_old[h], m_old[h], _CMP_UNORD_Q);
        }
        int64_t c = 0;
        for (; c + 1 < cols; c += 2)
            for (int h = 0; h < 2; h++) {
                vec x0 = V_LOAD(sr + c * ld + h * FA_LANES), x1 = V_LOAD(sr + (c + 1) * ld + h * FA_LANES);
                hi[h][0] = V_MAX(hi[h][0], x0);
                hi[h][1] = V_MAX(hi[h][1], x1);
                unord[h] = V_OR(unord[h], V_CMP(x0, x1, _CMP_UNORD_Q));
            }
        if (c < cols)
            for (int h = 0; h < 2; h++) {
                vec x0 = V_LOAD(sr + c * ld + h * FA_LANES);
                hi[h][0] = V_MAX(hi[h][0], x0);
                unord[h] = V_OR(unord[h], V_CMP(x0, x0, _CMP_UNORD_Q));
            }
        for (int h = 0; h < 2; h++) {
            m_new[h] = V_BLENDV(V_MAX(hi[h][0], hi[h][1]), nan, unord[h]);
            /* Rows whose max is still -inf have seen no key: p = 0, alpha = 1 (exp2(-inf + inf) is NaN).
             * Their scores are all -inf, so subtracting +inf instead of their max gives -inf, which
             * exp2 flushes to 0: no mask in the loop below. */
            live[h] = V_CMP(m_new[h], neg_inf, _CMP_NEQ_UQ);
            m_sub[h] = V_BLENDV(pos_inf, m_new[h], live[h]);
            sum[h] = V_ZERO();
        }
        for (c = 0; c < cols; c++)
            for (int h = 0; h < 2; h++) {
                FA_T *sc = sr + c * ld + h * FA_LANES;
                vec p = FA_NAME(exp_of_difference_)(V_SUB(V_LOAD(sc), m_sub[h]));
                V_STORE(sc, p);
                sum[h] = V_ADD(sum[h], p);
            }
        unsigned raised = 0;
        for (int h = 0; h < 2; h++) {
            alpha[h] = V_BLENDV(one, FA_NAME(exp_of_difference_)(V_SUB(m_old[h], m_new[h])), live[h]);
            V_STORE(row_sum + r + h * FA_LANES, V_FMA(alpha[h], V_LOAD(row_sum + r + h * FA_LANES), sum[h]));
            V_STORE(row_max + r + h * FA_LANES, m_new[h]);
            raised |= (unsigned)V_MOVEMASK(V_CMP(alpha[h], one, _CMP_NEQ_UQ)) << (h * FA_LANES);
        }
        /* Lazy rescaling: only rows whose max rose (alpha != 1) touch their accumulator. */
        raised &= FA_NAME(line_bits_)(rows - r);
        if (!raised) continue;
        FA_T a[FA_LINE];
        V_STOREU(a, alpha[0]);
        V_STOREU(a + FA_LANES, alpha[1]);
        for (int i = 0; i < FA_LINE; i++) {
            if (!((raised >> i) & 1)) continue;
            FA_T *ar = acc + (r + i) * acc_stride;
            vec w = V_SET1(a[i]);
            for (int64_t y = 0; y < acc_width; y += FA_LANES) V_STORE(ar + y, V_MUL(V_LOAD(ar + y), w));
        }
    }
}

/* ---- acc[i][0..dim) += sum_t w[i·wi + t·wt] · x[t][0..dim) ----
 * One microkernel for both products: accumulate (i = query row, t = key: wi = 1, wt = ld) and
 * accumulate_t (i = key, t = query row: wi = ld, wt = 1). Register block: NI accumulator rows ×
 * NV vectors; per reduction step NV loads of x and NI broadcasts. When TAIL is set the last vector
 * of x and of the accumulator are maskloads (and a maskstore) of the `last` lanes, so nothing past
 * dim is read or written: acc may be a caller's row-major output (the backward's dQ) at any row
 * stride. 6 × 2: 12 accumulators + 2 x vectors + 1 broadcast. */
FA_INLINE void FA_NAME(weighted_rows_block_)(int ni, int nv, int tail, int64_t steps, const FA_T *w,
                                             int64_t wi, int64_t wt, const FA_T *x, int64_t x_stride,
                                             __m256i last, FA_T *acc, int64_t acc_stride)
{
    vec a[FA_ROWS_ROWS][FA_ROWS_VECS];
    for (int i = 0; i < ni; i++)
        for (int j = 0; j < nv; j++)
            a[i][j] = tail && j == nv - 1 ? V_MASKLOAD(acc + i * acc_stride + j * FA_LANES, last)
                                          : V_LOADU(acc + i * acc_stride + j * FA_LANES);
    for (int64_t t = 0; t < steps; t++) {
        vec xv[FA_ROWS_VECS];
        for (int j = 0; j < nv; j++)
            xv[j] = tail && j == nv - 1 ? V_MASKLOAD(x + t * x_stride + j * FA_LANES, last)
                                        : V_LOADU(x + t * x_stride + j * FA_LANES);
        for (int i = 0; i < ni; i++) {
            vec b = V_SET1(w[i * wi + t * wt]);
            for (int j = 0; j < nv; j++) a[i][j] = V_FMA(b, xv[j], a[i][j]);
        }
    }
    for (int i = 0; i < ni; i++)
        for (int j = 0; j < nv; j++) {
            if (tail && j == nv - 1) V_MASKSTORE(acc + i * acc_stride + j * FA_LANES, last, a[i][j]);
            else V_STOREU(acc + i * acc_stride + j * FA_LANES, a[i][j]);
        }
}

/* The switch below instantiates every edge size of the 6 × 2 block, and only those. */
_Static_assert(FA_ROWS_ROWS == 6 && FA_ROWS_VECS == 2, "the switch below lists the 6 x 2 block's sizes");
// clang-format off
#define FA_ROWS_CASE(NI, NV, TAIL)                                                                           \
    case ((NI) * 8 + (NV)) * 2 + (TAIL):                                                                     \
        FA_NAME(weighted_rows_block_)((NI), (NV), (TAIL), steps, wb, wi, wt, xb, x_stride, last, ab,         \
                                      acc_stride);                                                           \
        break;
#define FA_ROWS_VECS_CASES(NI, NV) FA_ROWS_CASE(NI, NV, 0) FA_ROWS_CASE(NI, NV, 1)
#define FA_ROWS_ROWS_CASES(NI) FA_ROWS_VECS_CASES(NI, 1) FA_ROWS_VECS_CASES(NI, 2)
// clang-format on

static void FA_NAME(weighted_rows_)(int64_t n, int64_t steps, int64_t dim, const FA_T *w, int64_t wi,
                                    int64_t wt, const FA_T *x, int64_t x_stride, FA_T *acc,
                                    int64_t acc_stride)
{
    for (int64_t y = 0; y < dim; y += FA_ROWS_VECS * FA_LANES) {
        int64_t width = dim - y < FA_ROWS_VECS * FA_LANES ? dim - y : FA_ROWS_VECS * FA_LANES;
        int nv = (int)((width + FA_LANES - 1) / FA_LANES);
        int64_t last_lanes = width - (int64_t)(nv - 1) * FA_LANES;
        int tail = last_lanes < FA_LANES;
        __m256i last = V_TAIL(last_lanes);
        for (int64_t i = 0; i < n; i += FA_ROWS_ROWS) {
            int ni = n - i < FA_ROWS_ROWS ? (int)(n - i) : FA_ROWS_ROWS;
            const FA_T *wb = w + i * wi, *xb = x + y;
            FA_T *ab = acc + i * acc_stride + y;
            // clang-format off
            switch ((ni * 8 + nv) * 2 + tail) {
                FA_ROWS_ROWS_CASES(1) FA_ROWS_ROWS_CASES(2) FA_ROWS_ROWS_CASES(3)
                FA_ROWS_ROWS_CASES(4) FA_ROWS_ROWS_CASES(5) FA_ROWS_ROWS_CASES(6)
            default: break;
            }
            // clang-format on
        }
    }
}
#undef FA_ROWS_ROWS_CASES
#undef FA_ROWS_VECS_CASES
#undef FA_ROWS_CASE

static void FA_NAME(avx2_accumulate_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p, int64_t ld,
                                      const FA_T *x, int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    FA_NAME(weighted_rows_)(rows, cols, dim, p, 1, ld, x, x_stride, acc, acc_stride);
}

static void FA_NAME(avx2_accumulate_t_)(int64_t rows, int64_t cols, int64_t dim, const FA_T *p, int64_t ld,
                                        const FA_T *x, int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    FA_NAME(weighted_rows_)(cols, rows, dim, p, ld, 1, x, x_stride, acc, acc_stride);
}

static void FA_NAME(avx2_probabilities_)(int64_t ld, int64_t cols, FA_T *s, const FA_T *lse)
{
    const vec neg_inf = V_SET1(-(FA_T)INFINITY), pos_inf = V_SET1((FA_T)INFINITY);
    for (int64_t r = 0; r < ld; r += FA_LINE) {
        vec l[2];
        for (int h = 0; h < 2; h++) {
            /* Rows that saw no key (lse -inf, every score -inf) give 0, not NaN: they subtract +inf,
             * and exp2 flushes the -inf that leaves (as in the online softmax). */
            l[h] = V_LOAD(lse + r + h * FA_LANES);
            l[h] = V_BLENDV(pos_inf, l[h], V_CMP(l[h], neg_inf, _CMP_NEQ_UQ));
        }
        for (int64_t c = 0; c < cols; c++)
            for (int h = 0; h < 2; h++) {
                FA_T *sc = s + c * ld + r + h * FA_LANES;
                V_STORE(sc, FA_NAME(exp_of_difference_)(V_SUB(V_LOAD(sc), l[h])));
            }
    }
}

static void FA_NAME(avx2_score_grad_)(int64_t ld, int64_t cols, const FA_T *p, FA_T *dp, const FA_T *delta)
{
    for (int64_t r = 0; r < ld; r += FA_LANES) {
        vec d = V_LOAD(delta + r);
        for (int64_t c = 0; c < cols; c++)
            V_STORE(dp + c * ld + r, V_MUL(V_LOAD(p + c * ld + r), V_SUB(V_LOAD(dp + c * ld + r), d)));
    }
}

/* ---- softcap, ALiBi and bias (kernels/score_mods.h) ---- */
typedef vec vmask; /* AVX2 compares give a vector of all-ones or all-zero lanes */
#define V_SELECT(m, a, b) V_BLENDV((a), (b), (m))
FA_INLINE vec FA_NAME(lanes_below_)(int64_t n)
{
    return V_FROM_BITS(V_TAIL(n <= 0 ? 0 : n >= FA_LANES ? FA_LANES : n));
}
#define V_LANES_BELOW(n) FA_NAME(lanes_below_)(n)
#include "kernels/score_mods.h"

/* This element type's half of the AVX2 table. */
const FA_CAT(fa_kernels_, FA_SFX) FA_NAME(fa_avx2_kernels_) = {
    .traits = {.input = sizeof(FA_T) == 4 ? FA_F32 : FA_F64,
               .accum = sizeof(FA_T) == 4 ? FA_F32 : FA_F64,
               .lanes = FA_LANES,
               .pad_elems = FA_LINE,
               .scores_keys = FA_SCORES_KEYS,
               .scores_vecs = FA_SCORES_VECS,
               .rows_rows = FA_ROWS_ROWS,
               .rows_vecs = FA_ROWS_VECS,
               .score_tile = FA_TILE_KEY_MAJOR},
    .scores = FA_NAME(tile_scores_),
    .online_softmax = FA_NAME(avx2_online_softmax_),
    .accumulate = FA_NAME(avx2_accumulate_),
    .accumulate_t = FA_NAME(avx2_accumulate_t_),
    .probabilities = FA_NAME(avx2_probabilities_),
    .score_grad = FA_NAME(avx2_score_grad_),
    .modify = FA_NAME(modify_),
    .scale_grad = FA_NAME(scale_grad_)};

/* For the tests: exp2 of n values, as the kernels compute it; the tail is masked, so x and y are
 * touched only within n. */
void FA_NAME(fa_avx2_exp2_)(const FA_T *x, FA_T *y, int64_t n)
{
    int64_t i = 0;
    for (; i + FA_LANES <= n; i += FA_LANES) V_STOREU(y + i, FA_NAME(exp2_)(V_LOADU(x + i)));
    if (i < n) {
        __m256i m = V_TAIL(n - i);
        V_MASKSTORE(y + i, m, FA_NAME(exp2_)(V_MASKLOAD(x + i, m)));
    }
}

#if FA_TANH_VECTOR
/* For the tests: the softcap's tanh of n values, as the kernels compute it; the tail is masked, so x
 * and y are touched only within n. */
void FA_NAME(fa_avx2_tanh_)(const FA_T *x, FA_T *y, int64_t n)
{
    int64_t i = 0;
    for (; i + FA_LANES <= n; i += FA_LANES) V_STOREU(y + i, FA_NAME(tanh_)(V_LOADU(x + i)));
    if (i < n) {
        __m256i m = V_TAIL(n - i);
        V_MASKSTORE(y + i, m, FA_NAME(tanh_)(V_MASKLOAD(x + i, m)));
    }
}
#endif

#undef V_SELECT
#undef V_LANES_BELOW
#undef FA_LINE
#undef FA_FEW_ROWS
#undef FA_PREFETCH_KEYS
#undef FA_FEW_ROWS_KEYS
#undef V_LOAD_PART
#undef FA_SCORES_KEYS
#undef FA_SCORES_VECS
#undef FA_ROWS_ROWS
#undef FA_ROWS_VECS
#undef FA_EXP2_POLY
#undef FA_INLINE
#undef FA_NAME
#undef FA_CAT
#undef FA_CAT2
