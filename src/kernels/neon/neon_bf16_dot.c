/* SPDX-License-Identifier: BSD-3-Clause */
/* C (+)= A·B with BFDOT (fa_kernels_bf16.dot of the neon_bf16 table; kernels.h has the layouts): each
 * instruction multiplies 4 pairs of bf16 into 4 float sums, two products a lane, as vdpbf16ps does
 * 16 (kernels/avx512_bf16/dpbf16_dot.c). The by-element form takes A's pair from a lane of a vector
 * holding 4 pairs (8 k) of one row, so A costs one load per 4 pairs instead of a broadcast per pair.
 * Register block: 4 rows of C × 4 vectors of 4 columns, 16 accumulators + 4 vectors of A + 4 of B of
 * the 32 registers; per 8 k, 4 loads of A and 16 of B feed 64 BFDOTs (the budget from the object
 * code: src/README.md, "aarch64"). k past the last multiple of 8 goes a pair at a time, A's pair
 * broadcast, an odd K's last pair read as (A[m][K-1], 0), so nothing past a row of A is read.
 *
 * What BFDOT computes (Arm ARM, BFDotAdd with FPCR.EBF = 0, which Linux leaves; FPCR is otherwise
 * ignored): the two products (exact: 8-bit significands) are added and that sum added to the lane,
 * each addition rounded to odd rather than to nearest, bf16 subnormal inputs read as zero and
 * results below 2^-126 flushed to zero, NaN results the default NaN. Round-to-odd errs by less than
 * 1 ulp (2^-23 relative) where nearest errs by half, but a pair takes one accumulation where a
 * float FMA chain takes two: the bound of a K-term dot stays (K + 2)·2^-24·(|C| + sum|a·b|) to
 * first order, the bound tests/test_kernel_pairs.c checks. The order of the sums is fixed (k
 * ascending in pairs): the same for every call with these sizes, on every thread. */
#include <arm_neon.h>

#include "kernels/neon/neon_bf16.h"

#define FA_UNROLL _Pragma("GCC unroll 16")
#define ROWS      4 /* the register block: ROWS rows of C × 4 vectors (16 columns) */

static inline __attribute__((always_inline)) bfloat16x8_t load8(const uint16_t *p)
{
    return vreinterpretq_bf16_u16(vld1q_u16(p));
}

/* A's pair (k, k + 1) of a row in every lane (fa_bf16_pair_word). */
static inline __attribute__((always_inline)) bfloat16x8_t pair_of(const uint16_t *row, int64_t k, int64_t K)
{
    return vreinterpretq_bf16_u32(vdupq_n_u32(fa_bf16_pair_word(row, k, K)));
}

/* The 4 BFDOTs of row i with B's pair j of the chunk (lane j of A's vector: a constant, as the
 * instruction's index must be). */
#define DOT_LANE(j)                                                                               \
    FA_UNROLL                                                                                     \
    for (int i = 0; i < nm; i++) {                                                                \
        FA_UNROLL                                                                                 \
        for (int v = 0; v < 4; v++) acc[i][v] = vbfdotq_laneq_f32(acc[i][v], bv[j][v], av[i], j); \
    }

static inline __attribute__((always_inline)) void dot_block(const int nm, int64_t K, const uint16_t *a,
                                                            int64_t lda, const uint16_t *b, int64_t ldb,
                                                            float *c, int64_t ldc, float alpha,
                                                            int accumulate)
{
    float32x4_t acc[ROWS][4];
    FA_UNROLL
    for (int i = 0; i < nm; i++) {
        FA_UNROLL
        for (int v = 0; v < 4; v++)
            acc[i][v] = accumulate ? vld1q_f32(c + i * ldc + 4 * v) : vdupq_n_f32(0.0f);
    }
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        bfloat16x8_t av[ROWS], bv[4][4];
        FA_UNROLL
        for (int i = 0; i < nm; i++) av[i] = load8(a + i * lda + k);
        FA_UNROLL
        for (int j = 0; j < 4; j++) {
            FA_UNROLL
            for (int v = 0; v < 4; v++) bv[j][v] = load8(b + (k / 2 + j) * 2 * ldb + 8 * v);
        }
        DOT_LANE(0)
        DOT_LANE(1)
        DOT_LANE(2)
        DOT_LANE(3)
    }
    for (; k < K; k += 2) {
        bfloat16x8_t bv[4];
        FA_UNROLL
        for (int v = 0; v < 4; v++) bv[v] = load8(b + (k / 2) * 2 * ldb + 8 * v);
        FA_UNROLL
        for (int i = 0; i < nm; i++) {
            bfloat16x8_t av = pair_of(a + i * lda, k, K);
            FA_UNROLL
            for (int v = 0; v < 4; v++) acc[i][v] = vbfdotq_f32(acc[i][v], av, bv[v]);
        }
    }
    FA_UNROLL
    for (int i = 0; i < nm; i++) {
        FA_UNROLL
        for (int v = 0; v < 4; v++)
            vst1q_f32(c + i * ldc + 4 * v, accumulate ? acc[i][v] : vmulq_n_f32(acc[i][v], alpha));
    }
}

void fa_neon_bf16_dot(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda, const uint16_t *b,
                      int64_t ldb, float *c, int64_t ldc, float alpha, int accumulate)
{
    for (int64_t n = 0; n < N; n += 16)
        for (int64_t m = 0; m < M; m += ROWS) {
            const uint16_t *am = a + m * lda, *bn = b + 2 * n;
            float *cm = c + m * ldc + n;
            switch (M - m < ROWS ? M - m : ROWS) {
            case 1: dot_block(1, K, am, lda, bn, ldb, cm, ldc, alpha, accumulate); break;
            case 2: dot_block(2, K, am, lda, bn, ldb, cm, ldc, alpha, accumulate); break;
            case 3: dot_block(3, K, am, lda, bn, ldb, cm, ldc, alpha, accumulate); break;
            default: dot_block(ROWS, K, am, lda, bn, ldb, cm, ldc, alpha, accumulate); break;
            }
        }
}

/* Registers only: nothing to release. */
void fa_neon_bf16_release(void)
{
}
