/* SPDX-License-Identifier: BSD-3-Clause */
/* In-register transposes of one vector of rows × one vector of columns, for the files compiled with
 * AVX2 (the kernels' V_TRANSPOSE, the bias block of score_mods.h, and the transposed pack). */
#ifndef FA_KERNELS_AVX2_TRANSPOSE_H
#define FA_KERNELS_AVX2_TRANSPOSE_H

#include <immintrin.h>

/* v[i] lane j -> v[j] lane i, 8 x 8: pairs of rows interleaved (unpack ps), then pairs of pairs
 * (unpack pd), then the 128-bit halves exchanged: 24 shuffles, 3 a vector.
 * Unrolled and inlined, so that v stays in registers: gcc -O2 otherwise kept t, u and v in memory,
 * and a full bias (score_mods.h) took 3.45 ns per 16 scores instead of 2.2 (f32, Zen 4). */
static inline __attribute__((always_inline)) void avx2_transpose_f32(__m256 v[8])
{
    __m256 t[8], u[8];
    _Pragma("GCC unroll 16") for (int i = 0; i < 8; i += 2)
    {
        t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
    }
    /* u[g + k] (g = 0, 4), 128-bit half l: column 4l + k of rows g..g + 3 */
    _Pragma("GCC unroll 16") for (int g = 0; g < 8; g += 4)
    {
        __m256d a = _mm256_castps_pd(t[g]), b = _mm256_castps_pd(t[g + 2]), c = _mm256_castps_pd(t[g + 1]),
                d = _mm256_castps_pd(t[g + 3]);
        u[g] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, b));
        u[g + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, b));
        u[g + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(c, d));
        u[g + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(c, d));
    }
    _Pragma("GCC unroll 16") for (int k = 0; k < 4; k++)
    {
        v[k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x20);
        v[4 + k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x31);
    }
}

/* v[i] lane j -> v[j] lane i, 4 x 4: pairs of rows interleaved, then the 128-bit halves exchanged:
 * 8 shuffles, 2 a vector. */
static inline __attribute__((always_inline)) void avx2_transpose_f64(__m256d v[4])
{
    __m256d t0 = _mm256_unpacklo_pd(v[0], v[1]), t1 = _mm256_unpackhi_pd(v[0], v[1]);
    __m256d t2 = _mm256_unpacklo_pd(v[2], v[3]), t3 = _mm256_unpackhi_pd(v[2], v[3]);
    v[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    v[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    v[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    v[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

#endif
