/* SPDX-License-Identifier: BSD-3-Clause */
/* Elements of a stored type (kernels.h, widen: bf16, f16, int8, FP8 E4M3 and E5M2) as AVX2 float
 * vectors, converted exactly: the avx2 table's widen (avx2_widen.c) and its decode products
 * (avx2_f32.c, simd/half_operands.h) load them alike. Needs -mavx2 -mf16c. Each conversion gives the
 * bits of the scalar one in kernels/half.h and kernels/quant.h (avx512_stored.h says how). */
#ifndef FA_AVX2_STORED_H
#define FA_AVX2_STORED_H

#include <immintrin.h>
#include <stdint.h>

#include "flashattn.h"

/* Eight elements of a one-byte type, the low 8 bytes of b. */
static inline __attribute__((always_inline)) __m256 avx2_widen_bytes(__m128i b, fa_dtype t)
{
    if (t == FA_I8) return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    __m128i w = _mm_cvtepu8_epi16(b);
    if (t == FA_F8_E5M2) return _mm256_cvtph_ps(_mm_slli_epi16(w, 8));
    __m128i mag = _mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x7f)), 7);
    __m128i sign = _mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x80)), 8);
    __m256 f = _mm256_mul_ps(_mm256_cvtph_ps(_mm_or_si128(mag, sign)), _mm256_set1_ps(256.0f));
    __m256i w32 = _mm256_cvtepu8_epi32(b), low7 = _mm256_set1_epi32(0x7f);
    __m256i nan = _mm256_cmpeq_epi32(_mm256_and_si256(w32, low7), low7);
    __m256i quiet =
        _mm256_or_si256(_mm256_slli_epi32(_mm256_andnot_si256(low7, w32), 24), _mm256_set1_epi32(0x7fc00000));
    return _mm256_blendv_ps(f, _mm256_castsi256_ps(quiet), _mm256_castsi256_ps(nan));
}

/* Eight elements of a two-byte type. */
static inline __attribute__((always_inline)) __m256 avx2_widen_halves(__m128i h, fa_dtype t)
{
    if (t == FA_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

/* Lanes [0, n) of the elements of stored type t at p (n >= 1; every lane for n >= 8), the others 0,
 * nothing past element n - 1 read (a short chunk goes through a zeroed buffer). */
static inline __attribute__((always_inline)) __m256 avx2_load_stored(const void *p, int64_t n, fa_dtype t)
{
    if (t == FA_BF16 || t == FA_F16) {
        __m128i h;
        if (n >= 8) {
            h = _mm_loadu_si128((const __m128i *)p);
        } else {
            _Alignas(16) uint16_t part[8] = {0};
            for (int64_t i = 0; i < n; i++) part[i] = ((const uint16_t *)p)[i];
            h = _mm_load_si128((const __m128i *)(const void *)part);
        }
        return avx2_widen_halves(h, t);
    }
    __m128i b;
    if (n >= 8) {
        b = _mm_loadl_epi64((const __m128i *)p);
    } else {
        _Alignas(16) uint8_t part[16] = {0};
        for (int64_t i = 0; i < n; i++) part[i] = ((const uint8_t *)p)[i];
        b = _mm_load_si128((const __m128i *)(const void *)part);
    }
    return avx2_widen_bytes(b, t);
}

#endif
