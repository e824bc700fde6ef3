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

/* A tile whose rows fit one vector (a decode step's) steps that vector alone, not the FA_LINE_VECS
 * of every line (kernels.h); rows = 0 steps every row. */
static void FA_NAME(online_softmax_)(int64_t rows, int64_t ld, int64_t cols, FA_T *s, FA_T *row_max,
                                     FA_T *row_sum, FA_T *acc, int64_t acc_stride, int64_t acc_width)
{
    if (FA_LINE_VECS > 1 && rows >= 1 && rows <= FA_LANES)
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
