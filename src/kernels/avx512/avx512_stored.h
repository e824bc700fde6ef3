/* SPDX-License-Identifier: BSD-3-Clause */
/* Elements of a stored type (kernels.h, widen: bf16, f16, int8, FP8 E4M3 and E5M2) as AVX-512 float
 * vectors, converted exactly: the avx512 table's widen (simd/widen.h) and its decode products
 * (avx512_f32.c, simd/half_operands.h) load them alike. Needs -mavx512f -mavx512bw (and AVX2 for
 * 256-bit integer work, which every AVX-512 CPU has). Each conversion gives the bits of the scalar
 * one in kernels/half.h and kernels/quant.h. */
#ifndef FA_AVX512_STORED_H
#define FA_AVX512_STORED_H

#include <immintrin.h>
#include <stdint.h>

#include "flashattn.h"

/* E4M3 codes, sign-extended to 16-bit lanes, as binary16 values 2^-8 times theirs (exact, subnormals
 * included: the bias is 7, binary16's 15). Shifted left by 7 a lane holds S.S.EEEE.MMM.0000000;
 * clearing bit 14 leaves binary16's S.0EEEE.MMM0000000. The NaN codes S.1111.111 (0x3f80 or 0xff80
 * once shifted) would give ±480 · 2^-8 and become S.11111.1000000000 instead (0x3f80 ^ 0x4180 =
 * 0x7e00), the quiet NaN that vcvtph2ps widens to the float quant.h gives, sign | 0x7fc00000.
 * Seven operations in 16-bit lanes, where placing the fields and the NaN fix-up in 32-bit lanes
 * took thirteen. */
static inline __attribute__((always_inline)) __m256i avx512_e4m3_halves(__m256i w)
{
    __m256i x = _mm256_slli_epi16(w, 7);
    __m256i nan =
        _mm256_cmpeq_epi16(_mm256_or_si256(x, _mm256_set1_epi16(-0x4000)), _mm256_set1_epi16(-0x80));
    return _mm256_xor_si256(_mm256_and_si256(x, _mm256_set1_epi16(-0x4080)),
                            _mm256_and_si256(nan, _mm256_set1_epi16(0x4180)));
}

/* Sixteen elements of a one-byte type at b, converted. E5M2 is binary16's top byte (vcvtph2ps keeps
 * infinities and quiets NaNs as kernels/half.h does); E4M3 is binary16 times 256 (avx512_e4m3_halves). */
static inline __attribute__((always_inline)) __m512 avx512_widen_bytes(__m128i b, fa_dtype t)
{
    if (t == FA_I8) return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
    if (t == FA_F8_E5M2) return _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(b), 8));
    return _mm512_mul_ps(_mm512_cvtph_ps(avx512_e4m3_halves(_mm256_cvtepi8_epi16(b))),
                         _mm512_set1_ps(256.0f));
}

/* Sixteen elements of a two-byte type: bf16 is the top half of a float (zero-extend and shift); f16
 * through vcvtph2ps, exact for subnormals whatever MXCSR says, a signalling NaN made quiet. */
static inline __attribute__((always_inline)) __m512 avx512_widen_halves(__m256i h, fa_dtype t)
{
    if (t == FA_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* Sixteen bytes at p, or lanes [0, n) of them and zeros (n < 16), nothing past byte n - 1 read: a
 * short chunk goes through a zeroed buffer (AVX-512F has no masked 8-bit load). */
static inline __attribute__((always_inline)) __m128i avx512_load_bytes(const void *p, int64_t n)
{
    if (n >= 16) return _mm_loadu_si128((const __m128i *)p);
    _Alignas(16) uint8_t part[16] = {0};
    for (int64_t i = 0; i < n; i++) part[i] = ((const uint8_t *)p)[i];
    return _mm_load_si128((const __m128i *)(const void *)part);
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
    return avx512_widen_bytes(avx512_load_bytes(p, n), t);
}

/* E4M3 elements at p as avx512_load_stored loads them divided by 256 (exact): their binary16 halves
 * widened, without the multiplication, which the decode products fold into the row's scale
 * (few_rows_scores.h, FA_KIND_E4M3_HALVES). */
static inline __attribute__((always_inline)) __m512 avx512_load_e4m3_halves(const void *p, int64_t n)
{
    return _mm512_cvtph_ps(avx512_e4m3_halves(_mm256_cvtepi8_epi16(avx512_load_bytes(p, n))));
}

#endif
