/* SPDX-License-Identifier: BSD-3-Clause */
/* The SIMD tables' online softmax, probabilities and score gradient (kernels.h), written once against
 * the vocabulary of simd/simd.h. Defines FA_NAME(online_softmax_), FA_NAME(probabilities_) and
 * FA_NAME(score_grad_) (the softmax's body is simd/softmax_body.h).
 *
 * A score tile is walked one 64-byte line of rows at a time (FA_LINE_VECS vectors: avx512 1, avx2
 * 2): every vector of a line goes through each column together, so a pass over the tile reads each
 * cache line once (the tile is larger than L1), and the row statistics are plain vertical vector
 * operations. */

#include "kernels/simd/softmax_body.h"

/* The two steps, each out of line with its count of vectors a constant (so that its row statistics
 * stay in registers) and its own name (scripts/aarch64_budget.sh counts the whole tiles' loop). */
static __attribute__((noinline)) void
FA_NAME(online_softmax_lines_all_)(int64_t rows, int64_t ld, int64_t cols, FA_T *s, FA_T *row_max,
                                   FA_T *row_sum, FA_T *acc, int64_t acc_stride, int64_t acc_width)
{
    FA_NAME(online_softmax_lines_)
    (FA_LINE_VECS, 0, 0, 1, rows, ld, cols, s, row_max, row_sum, acc, acc_stride, acc_width, NULL);
}

static __attribute__((noinline)) void
FA_NAME(online_softmax_one_vector_)(int64_t rows, int64_t ld, int64_t cols, FA_T *s, FA_T *row_max,
                                    FA_T *row_sum, FA_T *acc, int64_t acc_stride, int64_t acc_width)
{
    FA_NAME(online_softmax_lines_)
    (1, 0, 0, 1, rows, ld, cols, s, row_max, row_sum, acc, acc_stride, acc_width, NULL);
}

/* One row whose scores lie key after key (ld = 1: a decode step's tile read in place, kernels.h): a
 * vector holds FA_LANES keys of the row, so exp runs once per FA_LANES keys where a tile's step runs
 * it once a key on a vector of one real row. Every operation is one that lane 0 of a tile's step
 * takes on the same values, and the row sum adds the keys one by one in key order, as a lane does:
 * the same bits. The max is the same in any order (a NaN anywhere gives the same NaN constant), but
 * for the sign of a zero max when +0 and -0 tie: no p, sum or result depends on it (s - ±0 and
 * exp(±0) agree, and two zero scores make the sum at least 2, so lse = m + log(l) keeps no zero). */
static __attribute__((noinline)) void FA_NAME(online_softmax_one_row_)(int64_t cols, FA_T *s, FA_T *row_max,
                                                                       FA_T *row_sum, FA_T *acc,
                                                                       int64_t acc_width)
{
    const vec neg_inf = V_SET1(-(FA_T)INFINITY), pos_inf = V_SET1((FA_T)INFINITY), one = V_SET1((FA_T)1),
              nan = V_SET1((FA_T)NAN), m_old = V_SET1(row_max[0]);
    vec hi[FA_MAX_CHAINS];
    hi[0] = m_old;
    FA_UNROLL
    for (int j = 1; j < FA_MAX_CHAINS; j++) hi[j] = neg_inf;
    vmask ordered = V_CMP(m_old, m_old, _CMP_ORD_Q);
    int64_t c = 0;
    for (; c + FA_MAX_CHAINS * FA_LANES <= cols; c += FA_MAX_CHAINS * FA_LANES) {
        FA_UNROLL
        for (int j = 0; j < FA_MAX_CHAINS; j++) {
            const vec x = V_LOADU(s + c + j * FA_LANES);
            hi[j] = V_MAX(hi[j], x);
            ordered = V_AND_CMP(ordered, x, x, _CMP_ORD_Q);
        }
    }
    for (; c + FA_LANES <= cols; c += FA_LANES) {
        const vec x = V_LOADU(s + c);
        hi[0] = V_MAX(hi[0], x);
        ordered = V_AND_CMP(ordered, x, x, _CMP_ORD_Q);
    }
    for (; c < cols; c++) { /* the last keys one at a time, each in every lane */
        const vec x = V_SET1(s[c]);
        hi[0] = V_MAX(hi[0], x);
        ordered = V_AND_CMP(ordered, x, x, _CMP_ORD_Q);
    }
    FA_UNROLL
    for (int j = 1; j < FA_MAX_CHAINS; j++) hi[0] = V_MAX(hi[0], hi[j]);
    /* the lanes' maxima, NaN in a lane that met one: the row's max, or the NaN constant */
    _Alignas(64) FA_T lane[FA_LANES];
    V_STORE(lane, V_SELECT(ordered, nan, hi[0]));
    FA_T max = lane[0];
    int met_nan = 0;
    for (int i = 0; i < FA_LANES; i++) {
        met_nan |= lane[i] != lane[i];
        if (lane[i] > max) max = lane[i];
    }
    const vec m_new = met_nan ? nan : V_SET1(max);
    /* a row that has seen no key subtracts +inf: p = 0 (softmax_body.h) */
    const vmask live = V_CMP(m_new, neg_inf, _CMP_NEQ_UQ);
    const vec m_sub = V_SELECT(live, pos_inf, m_new);
    for (c = 0; c + FA_LANES <= cols; c += FA_LANES)
        V_STOREU(s + c, FA_NAME(exp_of_difference_)(V_SUB(V_LOADU(s + c), m_sub)));
    if (c < cols) { /* the tail through a vector in memory: nothing past the row is read or written */
        const int64_t n = cols - c;
        for (int64_t i = 0; i < FA_LANES; i++) lane[i] = i < n ? s[c + i] : 0;
        V_STORE(lane, FA_NAME(exp_of_difference_)(V_SUB(V_LOAD(lane), m_sub)));
        for (int64_t i = 0; i < n; i++) s[c + i] = lane[i];
    }
    FA_T sum = 0;
    for (c = 0; c < cols; c++) sum += s[c];
    const vec alpha = V_SELECT(live, one, FA_NAME(exp_of_difference_)(V_SUB(m_old, m_new)));
    V_STORE(lane, V_FMA(alpha, V_SET1(row_sum[0]), V_SET1(sum)));
    row_sum[0] = lane[0];
    V_STORE(lane, m_new);
    row_max[0] = lane[0];
    V_STORE(lane, alpha);
    if (lane[0] == (FA_T)1) return; /* lazy rescaling, as a tile's step (a NaN alpha rescales) */
    for (int64_t y = 0; y < acc_width; y += FA_LANES) V_STORE(acc + y, V_MUL(V_LOAD(acc + y), alpha));
}

/* A tile whose rows fit one vector (a decode step's) steps that vector alone, not the FA_LINE_VECS
 * of every line (kernels.h); one row of ld 1 steps its keys a vector at a time; rows = 0 steps every
 * row. */
static void FA_NAME(online_softmax_)(int64_t rows, int64_t ld, int64_t cols, FA_T *s, FA_T *row_max,
                                     FA_T *row_sum, FA_T *acc, int64_t acc_stride, int64_t acc_width)
{
    if (ld == 1)
        FA_NAME(online_softmax_one_row_)(cols, s, row_max, row_sum, acc, acc_width);
    else if (FA_LINE_VECS > 1 && rows >= 1 && rows <= FA_LANES)
        FA_NAME(online_softmax_one_vector_)(rows, ld, cols, s, row_max, row_sum, acc, acc_stride, acc_width);
    else
        FA_NAME(online_softmax_lines_all_)(rows, ld, cols, s, row_max, row_sum, acc, acc_stride, acc_width);
}

/* Backward: p = exp(s - lse), a line at a time. */
static void FA_NAME(probabilities_)(int64_t ld, int64_t cols, FA_T *s, const FA_T *lse)
{
    const vec neg_inf = V_SET1(-(FA_T)INFINITY), pos_inf = V_SET1((FA_T)INFINITY);
    for (int64_t r = 0; r < ld; r += FA_LINE) {
        vec l[FA_LINE_VECS];
        FA_UNROLL
        for (int h = 0; h < FA_LINE_VECS; h++) {
            /* Rows that saw no key (lse -inf, every score -inf) give 0, not NaN: they subtract +inf,
             * and exp2 flushes the -inf that leaves (as in the online softmax). */
            l[h] = V_LOAD(lse + r + h * FA_LANES);
            l[h] = V_SELECT(V_CMP(l[h], neg_inf, _CMP_NEQ_UQ), pos_inf, l[h]);
        }
        for (int64_t c = 0; c < cols; c++) {
            FA_UNROLL
            for (int h = 0; h < FA_LINE_VECS; h++) {
                FA_T *sc = s + c * ld + r + h * FA_LANES;
                V_STORE(sc, FA_NAME(exp_of_difference_)(V_SUB(V_LOAD(sc), l[h])));
            }
        }
    }
}

/* Backward: dp = p · (dp - delta). */
static void FA_NAME(score_grad_)(int64_t ld, int64_t cols, const FA_T *p, FA_T *dp, const FA_T *delta)
{
    for (int64_t r = 0; r < ld; r += FA_LANES) {
        vec d = V_LOAD(delta + r);
        for (int64_t c = 0; c < cols; c++)
            V_STORE(dp + c * ld + r, V_MUL(V_LOAD(p + c * ld + r), V_SUB(V_LOAD(dp + c * ld + r), d)));
    }
}
