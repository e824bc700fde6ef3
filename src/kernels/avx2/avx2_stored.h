/* SPDX-License-Identifier: BSD-3-Clause */
/* Elements of a stored type (kernels.h, widen: bf16, f16, int8, FP8 E4M3 and E5M2) as AVX2 float
 * vectors, converted exactly: the avx2 table's widen (simd/widen.h) and its decode products
 * (avx2_f32.c, simd/half_operands.h) load them alike. Needs -mavx2 -mf16c. Each conversion gives the
 * bits of the scalar one in kernels/half.h and kernels/quant.h (avx512_stored.h says how). */
#ifndef FA_AVX2_STORED_H
#define FA_AVX2_STORED_H

#include <immintrin.h>
#include <stdint.h>

#include "flashattn.h"

/* E4M3 codes known to hold no NaN code, sign-extended to 16-bit lanes, as binary16 values 2^-8 times
 * theirs: the code's exponent and mantissa moved under binary16's (a shift) and its sign kept (the
 * mask drops the sign extension's copies). */
static inline __attribute__((always_inline)) __m128i avx2_e4m3_finite_halves(__m128i w)
{
    return _mm_and_si128(_mm_slli_epi16(w, 7), _mm_set1_epi16(-0x4080));
}

/* Any E4M3 codes so, as avx512_e4m3_halves (avx512_stored.h) says: the finite halves, and S.1111.111
 * (low 7 bits all ones, so the sign-extended lane or 0xff80 is all ones) made binary16's NaN. */
static inline __attribute__((always_inline)) __m128i avx2_e4m3_halves(__m128i w)
{
    __m128i nan = _mm_cmpeq_epi16(_mm_or_si128(w, _mm_set1_epi16(-0x80)), _mm_set1_epi16(-1));
    return _mm_xor_si128(avx2_e4m3_finite_halves(w), _mm_and_si128(nan, _mm_set1_epi16(0x4180)));
}

/* Eight elements of a one-byte type, the low 8 bytes of b. */
static inline __attribute__((always_inline)) __m256 avx2_widen_bytes(__m128i b, fa_dtype t)
{
    if (t == FA_I8) return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    /* E5M2 is binary16's top byte: interleaved with zero bytes, one shuffle (not widen and shift) */
    if (t == FA_F8_E5M2) return _mm256_cvtph_ps(_mm_unpacklo_epi8(_mm_setzero_si128(), b));
    return _mm256_mul_ps(_mm256_cvtph_ps(avx2_e4m3_halves(_mm_cvtepi8_epi16(b))), _mm256_set1_ps(256.0f));
}

/* Eight bf16 elements, given in both 128-bit halves of hh, as floats: each element's two bytes moved
 * into the top of its lane, zeros below (one in-lane byte shuffle). Loaded by a broadcast, which
 * takes only a load port, this spends one shuffle where widening words to dwords and shifting them
 * spent a shuffle and a shift (on Zen 3 both on its two shuffle and shift pipes, on an Intel server
 * core the shift on an FMA port). */
static inline __attribute__((always_inline)) __m256 avx2_bf16_of_broadcast(__m256i hh)
{
    const __m256i to_top = _mm256_setr_epi8(-1, -1, 0, 1, -1, -1, 2, 3, -1, -1, 4, 5, -1, -1, 6, 7, /* 0-3 */
                                            -1, -1, 8, 9, -1, -1, 10, 11, -1, -1, 12, 13, -1, -1, 14, 15);
    return _mm256_castsi256_ps(_mm256_shuffle_epi8(hh, to_top));
}

/* Eight elements of a two-byte type. */
static inline __attribute__((always_inline)) __m256 avx2_widen_halves(__m128i h, fa_dtype t)
{
    if (t == FA_BF16) return avx2_bf16_of_broadcast(_mm256_broadcastsi128_si256(h));
    return _mm256_cvtph_ps(h);
}

/* Eight bytes at p in the low half, or lanes [0, n) of them and zeros (n < 8), nothing past byte
 * n - 1 read (a short chunk goes through a zeroed buffer). */
static inline __attribute__((always_inline)) __m128i avx2_load_bytes(const void *p, int64_t n)
{
    if (n >= 8) return _mm_loadl_epi64((const __m128i *)p);
    _Alignas(16) uint8_t part[16] = {0};
    for (int64_t i = 0; i < n; i++) part[i] = ((const uint8_t *)p)[i];
    return _mm_load_si128((const __m128i *)(const void *)part);
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
    return avx2_widen_bytes(avx2_load_bytes(p, n), t);
}

/* E4M3 elements at p divided by 256 (exact), as avx512_load_e4m3_halves (avx512_stored.h). */
static inline __attribute__((always_inline)) __m256 avx2_load_e4m3_halves(const void *p, int64_t n)
{
    return _mm256_cvtph_ps(avx2_e4m3_halves(_mm_cvtepi8_epi16(avx2_load_bytes(p, n))));
}

/* The same for E4M3 elements known to hold no NaN code (avx2_e4m3_rows_finite): the halves without the
 * steps that make S.1111.111 a NaN, the same bits for every other code. */
static inline __attribute__((always_inline)) __m256 avx2_load_e4m3_finite_halves(const void *p, int64_t n)
{
    return _mm256_cvtph_ps(avx2_e4m3_finite_halves(_mm_cvtepi8_epi16(avx2_load_bytes(p, n))));
}

/* Whether the first n E4M3 elements of each of the `cols` rows hold no NaN code (S.1111.111, the one
 * byte that is 0xff with its sign bit set): the largest byte so set, 32 at a time (two instructions
 * a load), the rest of a row one by one. */
static inline int avx2_e4m3_rows_finite(const void *const *rows, int64_t cols, int64_t n)
{
    const int64_t whole = n / 32 * 32;
    __m256i top = _mm256_setzero_si256();
    int finite = 1;
    for (int64_t c = 0; c < cols; c++) {
        const uint8_t *b = (const uint8_t *)rows[c];
        for (int64_t x = 0; x < whole; x += 32)
            top = _mm256_max_epu8(top,
                                  _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(const void *)(b + x)),
                                                  _mm256_set1_epi8(-128)));
        for (int64_t x = whole; x < n; x++) finite &= (b[x] & 0x7f) != 0x7f;
    }
    const __m256i nan = _mm256_cmpeq_epi8(top, _mm256_set1_epi8(-1));
    return finite && _mm256_testz_si256(nan, nan);
}

#endif
