/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX2+FMA kernels for float: what differs from the other element type,
 * then the template (avx2_tiles.h). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx2/avx2.h"
#include "kernels/exp2_poly.h"

typedef __m256 vec;
#define FA_T          float
#define FA_SFX        f32
#define FA_PS         ps
#define FA_LANES      8
#define FA_WIDEN_SIMD 1 /* simd/table.h: widen from simd/widen.h */

/* The sum of a vector's lanes: halves added pairwise (the order is fixed, so is the result). */
static inline float avx2_reduce_add_f32(__m256 v)
{
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}
#define V_REDUCE_ADD(v) avx2_reduce_add_f32(v)

/* Lanes [0, n) as a maskload/maskstore mask, n in [0, FA_LANES]. */
#define V_TAIL(n) _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
/* exp2's split x = n + f without a rounding instruction: adding 1.5·2^23 + 127 to x in [-126, 128]
 * rounds it to an integer n (to nearest) and leaves n + 127 in the low mantissa bits; subtracting
 * it back gives n exactly, and shifting those bits into the exponent field gives 2^n (n = -126:
 * field 1, FLT_MIN; n = 128: field 255, +inf). */
#define FA_EXP2_SHIFT        (0x1.8p23f + 127.0f)
#define V_POW2_OF_SHIFTED(t) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23))

#define FA_EXP2_COEF fa_exp2_coef_f32

/* Lanes [0, n) of a vector of stored elements (bf16, f16, int8, FP8) converted exactly, the rest 0,
 * nothing past element n - 1 read (avx2_stored.h; kernels/simd/half_operands.h). */
#include "kernels/avx2/avx2_stored.h"
#define V_LOAD_STORED(p, n, t)   avx2_load_stored((p), (n), (t))
#define V_LOAD_E4M3_HALVES(p, n) avx2_load_e4m3_halves((p), (n)) /* few_rows_scores.h */
#define FA_HALF_VECS             2 /* of the 16 registers: 4 rows x 2 vectors + 2 x vectors + a broadcast */
#define FA_HALF_VECS_FEW         4 /* for 1 or 2 rows: 2 x 4 + 4 + 1 */
#define FA_HALF_VECS_ONE         8 /* for 1 row: 8 + a converted vector + the scale + a broadcast */
/* E4M3 rows without NaN codes (few_rows_scores.h, FA_KIND_E4M3_FINITE) */
#define V_LOAD_E4M3_FINITE_HALVES(p, n)   avx2_load_e4m3_finite_halves((p), (n))
#define V_E4M3_ROWS_FINITE(rows, cols, n) avx2_e4m3_rows_finite((rows), (cols), (n))

/* 16 bf16 elements in one load, split by position as avx512_load_bf16_pairs (avx512_f32.c) splits
 * 32: even elements 2l into lane l of *even, odd ones 2l + 1 into lane l of *odd. A shift and an
 * and per 16 elements besides the load, against two vpmovzxwd and two shifts, which all take Zen 3's
 * two shuffle and shift pipes (the and takes any) (simd/half_operands.h's paired blocks). */
static inline __attribute__((always_inline)) void avx2_load_bf16_pairs(const uint16_t *p, __m256 *even,
                                                                       __m256 *odd)
{
    __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)p);
    *even = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
    *odd = _mm256_and_ps(_mm256_castsi256_ps(x), _mm256_castsi256_ps(_mm256_set1_epi32((int)0xffff0000u)));
}
/* 16 floats (lo: elements 0-7, hi: 8-15) into the even/odd lanes above, and back */
static inline __attribute__((always_inline)) void avx2_unzip(__m256 lo, __m256 hi, __m256 *even, __m256 *odd)
{
    /* within each 128-bit half, then the 64-bit pairs into order: [0 2 | 8 10 | 4 6 | 12 14] -> 0..14 */
    __m256d e = _mm256_castps_pd(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)));
    __m256d o = _mm256_castps_pd(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(e, _MM_SHUFFLE(3, 1, 2, 0)));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(o, _MM_SHUFFLE(3, 1, 2, 0)));
}
static inline __attribute__((always_inline)) void avx2_zip(__m256 even, __m256 odd, __m256 *lo, __m256 *hi)
{
    __m256 u0 = _mm256_unpacklo_ps(even, odd),
           u1 = _mm256_unpackhi_ps(even, odd); /* [0-3 | 8-11], [4-7 | 12-15] */
    *lo = _mm256_permute2f128_ps(u0, u1, 0x20);
    *hi = _mm256_permute2f128_ps(u0, u1, 0x31);
}
#define V_LOAD_BF16_PAIRS(p, even, odd) avx2_load_bf16_pairs((p), (even), (odd))
#define V_UNZIP(lo, hi, even, odd)      avx2_unzip((lo), (hi), (even), (odd))
#define V_ZIP(even, odd, lo, hi)        avx2_zip((even), (odd), (lo), (hi))

#include "kernels/avx2/avx2_transpose.h"
#define V_TRANSPOSE(v) avx2_transpose_f32(v)
/* softcap: the vector tanh of kernels/score_mods.h */
#define FA_TANH_VECTOR 1

#include "avx2_tiles.h"
