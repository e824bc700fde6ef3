/* SPDX-License-Identifier: BSD-3-Clause */
/* Elements of a stored type (kernels.h, widen: bf16, f16, int8, FP8 E4M3 and E5M2) as AVX-512 float
 * vectors, converted exactly: the avx512 table's widen (avx512_widen.c) and its decode products
 * (avx512_f32.c, simd/half_operands.h) load them alike. Needs -mavx512f -mavx512bw (and AVX2 for
 * 256-bit integer work, which every AVX-512 CPU has). Each conversion gives the bits of the scalar
 * one in kernels/half.h and kernels/quant.h. */
#ifndef FA_AVX512_STORED_H
#define FA_AVX512_STORED_H

#include <immintrin.h>
#include <stdint.h>

#include "flashattn.h"

/* Sixteen elements of a one-byte type at b, converted. E5M2 is binary16's top byte (vcvtph2ps keeps
 * infinities and quiets NaNs as kernels/half.h does). E4M3's magnitude bits, moved into binary16's
 * exponent and mantissa fields, are the same number times 2^-8 (its bias is 7, binary16's 15),
 * subnormals included, so vcvtph2ps and a multiplication by 256 give it exactly; S.1111.111, E4M3's
 * only NaN, would give ±480 and becomes the quiet NaN with its sign. */
static inline __attribute__((always_inline)) __m512 avx512_widen_bytes(__m128i b, fa_dtype t)
{
    if (t == FA_I8) return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
    __m256i w = _mm256_cvtepu8_epi16(b);
    if (t == FA_F8_E5M2) return _mm512_cvtph_ps(_mm256_slli_epi16(w, 8));
    __m256i mag = _mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x7f)), 7);
    __m256i sign = _mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x80)), 8);
    __m512 f = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_or_si256(mag, sign)), _mm512_set1_ps(256.0f));
    __m512i w32 = _mm512_cvtepu8_epi32(b), low7 = _mm512_set1_epi32(0x7f);
    __mmask16 nan = _mm512_cmpeq_epi32_mask(_mm512_and_si512(w32, low7), low7);
    __m512i quiet =
        _mm512_or_si512(_mm512_slli_epi32(_mm512_andnot_si512(low7, w32), 24), _mm512_set1_epi32(0x7fc00000));
    return _mm512_mask_mov_ps(f, nan, _mm512_castsi512_ps(quiet));
}

/* Sixteen elements of a two-byte type: bf16 is the top half of a float (zero-extend and shift); f16
 * through vcvtph2ps, exact for subnormals whatever MXCSR says, a signalling NaN made quiet. */
static inline __attribute__((always_inline)) __m512 avx512_widen_halves(__m256i h, fa_dtype t)
{
    if (t == FA_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* Lanes [0, n) of the elements of stored type t at p (n >= 1; every lane for n >= 16), the others
 * 0, nothing past element n - 1 read: a short chunk goes through a zeroed buffer (AVX-512F has no
 * masked 8- or 16-bit load). */
static inline __attribute__((always_inline)) __m512 avx512_load_stored(const void *p, int64_t n, fa_dtype t)
{
    if (t == FA_BF16 || t == FA_F16) {
        __m256i h;
        if (n >= 16) {
            h = _mm256_loadu_si256((const __m256i *)p);
        } else {
            _Alignas(32) uint16_t part[16] = {0};
            for (int64_t i = 0; i < n; i++) part[i] = ((const uint16_t *)p)[i];
            h = _mm256_load_si256((const __m256i *)(const void *)part);
        }
        return avx512_widen_halves(h, t);
    }
    __m128i b;
    if (n >= 16) {
        b = _mm_loadu_si128((const __m128i *)p);
    } else {
        _Alignas(16) uint8_t part[16] = {0};
        for (int64_t i = 0; i < n; i++) part[i] = ((const uint8_t *)p)[i];
        b = _mm_load_si128((const __m128i *)(const void *)part);
    }
    return avx512_widen_bytes(b, t);
}

#endif
