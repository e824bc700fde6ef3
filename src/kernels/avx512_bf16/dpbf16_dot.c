/* SPDX-License-Identifier: BSD-3-Clause */
/* C (+)= A·B with vdpbf16ps (fa_kernels_bf16.dot of the avx512_bf16 table; kernels.h has the
 * layouts): each instruction multiplies 16 pairs of bf16 into 16 float sums, two products a lane.
 * Register block: 6 rows of C × 4 vectors of 16 columns, 24 accumulators; per pair of k, 4 loads
 * of B (16 columns' pairs each) and 6 broadcasts of A's pair (k, k + 1) feed 24 instructions. An
 * odd K's last pair is read as (A[m][K-1], 0), so nothing past a row of A is read.
 *
 * Speed: on the Xeon VM of issue 13 vdpbf16ps issues once per two cycles where an f32 FMA issues
 * twice a cycle, so this dot does half the multiply-adds per cycle of the avx512 table's f32
 * kernels: the table is not chosen automatically (select.c), only by FLASHATTN_ISA=avx512_bf16,
 * until a CPU where it pays (AMD Zen 4 and 5 have no AMX) is measured. */
#include <immintrin.h>
#include <string.h>

#include "kernels/avx512_bf16/avx512_bf16.h"

#define FA_UNROLL _Pragma("GCC unroll 16")

/* A's pair (k, k + 1) of row m as one 32-bit word broadcast: the pair's upper half zero for an
 * odd K's last k. */
static inline __attribute__((always_inline)) __m512bh pair_of(const uint16_t *row, int64_t k, int64_t K)
{
    uint32_t w = row[k];
    if (k + 1 < K) w |= (uint32_t)row[k + 1] << 16;
    return (__m512bh)_mm512_set1_epi32((int)w);
}

static inline __attribute__((always_inline)) void dot_block(const int nm, const int nv, int64_t K, const uint16_t *a,
                                                           int64_t lda, const uint16_t *b, int64_t ldb, float *c,
                                                           int64_t ldc, float alpha, int accumulate)
{
    __m512 acc[6][4];
    FA_UNROLL for (int i = 0; i < nm; i++)
        FA_UNROLL for (int j = 0; j < nv; j++) acc[i][j] = accumulate ? _mm512_loadu_ps(c + i * ldc + 16 * j) : _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k += 2) {
        __m512bh bv[4];
        FA_UNROLL for (int j = 0; j < nv; j++) bv[j] = (__m512bh)_mm512_loadu_si512(b + (k / 2) * 2 * ldb + 32 * j);
        FA_UNROLL for (int i = 0; i < nm; i++) {
            __m512bh av = pair_of(a + i * lda, k, K);
            FA_UNROLL for (int j = 0; j < nv; j++) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, bv[j]);
        }
    }
    const __m512 scale = _mm512_set1_ps(alpha);
    FA_UNROLL for (int i = 0; i < nm; i++)
        FA_UNROLL for (int j = 0; j < nv; j++)
            _mm512_storeu_ps(c + i * ldc + 16 * j, accumulate ? acc[i][j] : _mm512_mul_ps(acc[i][j], scale));
}

// clang-format off
#define DOT_CASE(NM, NV)                                                                                     \
    case (NM) * 8 + (NV):                                                                                    \
        dot_block(NM, NV, K, a + m * lda, lda, b + 2 * n, ldb, c + m * ldc + n, ldc, alpha, accumulate);     \
        break;
#define DOT_ROWS(NM) DOT_CASE(NM, 1) DOT_CASE(NM, 2) DOT_CASE(NM, 3) DOT_CASE(NM, 4)
// clang-format on

void fa_avx512_bf16_dot(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda, const uint16_t *b,
                        int64_t ldb, float *c, int64_t ldc, float alpha, int accumulate)
{
    for (int64_t n = 0; n < N; n += 64) {
        int nv = (int)((N - n) / 16 < 4 ? (N - n) / 16 : 4);
        for (int64_t m = 0; m < M; m += 6) {
            int nm = (int)(M - m < 6 ? M - m : 6);
            switch (nm * 8 + nv) {
                DOT_ROWS(1) DOT_ROWS(2) DOT_ROWS(3) DOT_ROWS(4) DOT_ROWS(5) DOT_ROWS(6)
            default: break;
            }
        }
    }
}

/* Registers only: nothing to release. */
void fa_avx512_bf16_release(void)
{
}
