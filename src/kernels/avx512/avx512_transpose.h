/* SPDX-License-Identifier: BSD-3-Clause */
/* In-register transposes of one vector of rows × one vector of columns, for the files compiled with
 * AVX-512 (the kernels' V_TRANSPOSE, the bias block of score_mods.h, and the transposed pack). */
#ifndef FA_KERNELS_AVX512_TRANSPOSE_H
#define FA_KERNELS_AVX512_TRANSPOSE_H

#include <immintrin.h>

/* v[i] lane j -> v[j] lane i, 16 x 16: pairs of rows interleaved (unpack ps), then pairs of pairs
 * (unpack pd), then 128-bit lanes gathered in two rounds of shuffle_f32x4: 64 shuffles, 4 a vector.
 * Unrolled and inlined, so that v stays in registers: gcc -O2 otherwise kept t, u and v in memory,
 * and a full bias (score_mods.h) took 3.45 ns per 16 scores instead of 2.2 (f32, Zen 4). */
static inline __attribute__((always_inline)) void avx512_transpose_f32(__m512 v[16])
{
    __m512 t[16], u[16];
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i += 2)
    {
        t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
    }
    /* u[g + k] (g = 0, 4, 8, 12), 128-bit lane l: column 4l + k of rows g..g + 3 */
    _Pragma("GCC unroll 16") for (int g = 0; g < 16; g += 4)
    {
        __m512d a = _mm512_castps_pd(t[g]), b = _mm512_castps_pd(t[g + 2]), c = _mm512_castps_pd(t[g + 1]),
                d = _mm512_castps_pd(t[g + 3]);
        u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
        u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
    }
    _Pragma("GCC unroll 16") for (int k = 0; k < 4; k++)
    {
        __m512 lo01 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88),
               hi01 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xdd);
        __m512 lo23 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88),
               hi23 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xdd);
        v[k] = _mm512_shuffle_f32x4(lo01, lo23, 0x88);
        v[8 + k] = _mm512_shuffle_f32x4(lo01, lo23, 0xdd);
        v[4 + k] = _mm512_shuffle_f32x4(hi01, hi23, 0x88);
        v[12 + k] = _mm512_shuffle_f32x4(hi01, hi23, 0xdd);
    }
}

/* v[i] lane j -> v[j] lane i, 8 x 8: pairs of rows interleaved (unpack pd), then 128-bit lanes
 * gathered in two rounds of shuffle_f64x2: 24 shuffles, 3 a vector.
 * Unrolled and inlined, so that v stays in registers: gcc -O2 otherwise kept t, u and v in memory,
 * and a full bias (score_mods.h) took 3.45 ns per 16 scores instead of 2.2 (f32, Zen 4). */
static inline __attribute__((always_inline)) void avx512_transpose_f64(__m512d v[8])
{
    __m512d t[8], u[8];
    _Pragma("GCC unroll 16") for (int i = 0; i < 8; i += 2)
    {
        t[i] = _mm512_unpacklo_pd(v[i], v[i + 1]);     /* lane l: v[i][2l], v[i+1][2l] */
        t[i + 1] = _mm512_unpackhi_pd(v[i], v[i + 1]); /* lane l: v[i][2l+1], v[i+1][2l+1] */
    }
    /* u[h + j] (h = 0, 4): columns j and j + 4 of rows h..h + 3, as 128-bit lanes (rows h, h + 1 of
     * column j), (the same of column j + 4), (rows h + 2, h + 3 of column j), (the same of j + 4) */
    _Pragma("GCC unroll 16") for (int h = 0; h < 8; h += 4)
        _Pragma("GCC unroll 16") for (int k = 0; k < 2; k++)
    {
        u[h + k] = _mm512_shuffle_f64x2(t[h + k], t[h + 2 + k], 0x88);
        u[h + 2 + k] = _mm512_shuffle_f64x2(t[h + k], t[h + 2 + k], 0xdd);
    }
    _Pragma("GCC unroll 16") for (int k = 0; k < 4; k++)
    {
        v[k] = _mm512_shuffle_f64x2(u[k], u[4 + k], 0x88);
        v[4 + k] = _mm512_shuffle_f64x2(u[k], u[4 + k], 0xdd);
    }
}

#endif
