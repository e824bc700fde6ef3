/* SPDX-License-Identifier: BSD-3-Clause */
/* C (+)= A·B with vdpbf16ps (fa_kernels_bf16.dot of the avx512_bf16 table; kernels.h has the
 * layouts): each instruction multiplies 16 pairs of bf16 into 16 float sums, two products a lane.
 * Register block: 6 rows of C × 4 vectors of 16 columns, 24 accumulators; per pair of k, 4 loads
 * of B (16 columns' pairs each) and 6 broadcasts of A's pair (k, k + 1), each a 32-bit load, feed 24
 * instructions. An odd K's last pair is read as (A[m][K-1], 0), so nothing past a row of A is read.
 *
 * Speed: a CPU that issues vdpbf16ps as often as an f32 FMA does twice the multiply-adds per cycle
 * (AMD Zen 4: 2.0x in registers; this dot reaches 92-99% of that in L1). On the Xeon VM measured it
 * issues once per two cycles where an f32 FMA issues twice a cycle: there this dot does half the
 * multiply-adds per cycle of the avx512 table's f32 kernels. The automatic choice takes this table
 * where it pays (runtime/dispatch.c, dot_units_pay), and FLASHATTN_ISA=avx512_bf16 anywhere.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/avx512_bf16/avx512_bf16.h"

#define FA_UNROLL _Pragma("GCC unroll 16")

/* A's pair (k, k + 1) of row m, both inside the row, as one 32-bit word broadcast: a load the
 * product takes as its broadcast operand, where assembling the pair in a general register and
 * moving it to a vector costs two more operations per broadcast than the six products it feeds. */
static inline __attribute__((always_inline)) __m512bh pair_at(const uint16_t *row, int64_t k)
{
    uint32_t w;
    memcpy(&w, row + k, sizeof w);
    return (__m512bh)_mm512_set1_epi32((int)w);
}

/* An odd K's last pair, (A[m][K-1], 0): nothing past the row is read. */
static inline __attribute__((always_inline)) __m512bh last_of(const uint16_t *row, int64_t k)
{
    return (__m512bh)_mm512_set1_epi32((int)(uint32_t)row[k]);
}

/* acc[i][j] += A's pair (k, k + 1) of row i times B's pair row bk (nv vectors of 16 columns); with
 * `last`, A's pair is an odd K's last. */
static inline __attribute__((always_inline)) void dot_step(const int nm, const int nv, __m512 acc[6][4],
                                                           const uint16_t *a, int64_t lda, int64_t k,
                                                           const uint16_t *bk, const int last)
{
    __m512bh bv[4];
    FA_UNROLL
    for (int j = 0; j < nv; j++) {
        bv[j] = (__m512bh)_mm512_loadu_si512(bk + 32 * j);
    }
    FA_UNROLL
    for (int i = 0; i < nm; i++) {
        __m512bh av = last ? last_of(a + i * lda, k) : pair_at(a + i * lda, k);
        FA_UNROLL
        for (int j = 0; j < nv; j++) {
            acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, bv[j]);
        }
    }
}

static inline __attribute__((always_inline)) void dot_block(const int nm, const int nv, int64_t K,
                                                            const uint16_t *a, int64_t lda, const uint16_t *b,
                                                            int64_t ldb, float *c, int64_t ldc, float alpha,
                                                            int accumulate)
{
    __m512 acc[6][4];
    FA_UNROLL
    for (int i = 0; i < nm; i++) {
        FA_UNROLL
        for (int j = 0; j < nv; j++) {
            acc[i][j] = accumulate ? _mm512_loadu_ps(c + i * ldc + 16 * j) : _mm512_setzero_ps();
        }
    }
    const uint16_t *bk = b;
    int64_t k = 0;
    for (; k + 1 < K; k += 2, bk += 2 * ldb) dot_step(nm, nv, acc, a, lda, k, bk, 0);
    if (k < K) dot_step(nm, nv, acc, a, lda, k, bk, 1);
    const __m512 scale = _mm512_set1_ps(alpha);
    FA_UNROLL
    for (int i = 0; i < nm; i++) {
        FA_UNROLL
        for (int j = 0; j < nv; j++) {
            __m512 x = accumulate ? acc[i][j] : _mm512_mul_ps(acc[i][j], scale);
            _mm512_storeu_ps(c + i * ldc + 16 * j, x);
        }
    }
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
                DOT_ROWS(1) DOT_ROWS(2) DOT_ROWS(3) DOT_ROWS(4) DOT_ROWS(5) DOT_ROWS(6) default : break;
            }
        }
    }
}

/* Registers only: nothing to release. */
void fa_avx512_bf16_release(void)
{
}
