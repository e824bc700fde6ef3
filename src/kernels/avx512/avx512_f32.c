/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX-512F kernels for float: what differs from the other element type,
 * then the template (avx512_tiles.h). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"
#include "kernels/exp2_poly.h"

typedef __m512 vec;
typedef __mmask16 mask;
#define FA_T                     float
#define FA_SFX                   f32
#define FA_PS                    ps
#define FA_LANES                 16
#define FA_WIDEN_SIMD            1 /* simd/table.h: widen from simd/widen.h */
#define FA_DROPOUT_PROBS_OP      fa_avx512_dropout_probs_f32
#define FA_DROPOUT_SCORE_GRAD_OP fa_avx512_dropout_score_grad_f32

#define FA_EXP2_COEF  fa_exp2_floor_coef_f32
#define FA_EXP2_FLOOR 1

/* Lanes [0, n) of a vector of stored elements (bf16, f16, int8, FP8) converted exactly, the rest 0,
 * nothing past element n - 1 read (avx512_stored.h; kernels/simd/half_operands.h). */
#include "kernels/avx512/avx512_stored.h"
#define V_LOAD_STORED(p, n, t)   avx512_load_stored((p), (n), (t))
#define V_LOAD_E4M3_HALVES(p, n) avx512_load_e4m3_halves((p), (n)) /* few_rows_scores.h */
#define FA_HALF_VECS             4 /* 4 rows x 4 vectors + 4 x vectors + a broadcast */
#define FA_HALF_VECS_FEW         8 /* for 1 or 2 rows: 2 x 8 + 8 + 1 */

/* 32 bf16 elements in one load, split by position: even elements 2l into lane l of *even (shifted
 * up into the high half), odd elements 2l + 1 into lane l of *odd (their low neighbour masked off).
 * Exact, like avx512_load_half, but one instruction per 16 elements besides the load, against two
 * (vpmovzxwd, on the shuffle port, and the shift): simd/half_operands.h's paired blocks. */
static inline __attribute__((always_inline)) void avx512_load_bf16_pairs(const uint16_t *p, __m512 *even,
                                                                         __m512 *odd)
{
    __m512i x = _mm512_loadu_si512((const void *)p);
    *even = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    *odd = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32((int)0xffff0000u)));
}
/* 32 floats (lo: elements 0-15, hi: 16-31) into the even/odd lanes above, and back */
static inline __attribute__((always_inline)) void avx512_unzip(__m512 lo, __m512 hi, __m512 *even,
                                                               __m512 *odd)
{
    const __m512i e = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    *even = _mm512_permutex2var_ps(lo, e, hi);
    *odd = _mm512_permutex2var_ps(lo, _mm512_add_epi32(e, _mm512_set1_epi32(1)), hi);
}
static inline __attribute__((always_inline)) void avx512_zip(__m512 even, __m512 odd, __m512 *lo, __m512 *hi)
{
    const __m512i l = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    *lo = _mm512_permutex2var_ps(even, l, odd);
    *hi = _mm512_permutex2var_ps(even, _mm512_add_epi32(l, _mm512_set1_epi32(8)), odd);
}
/* 32 bf16 elements in one load, widened in order: elements 0-15 into *lo, 16-31 into *hi, each placed
 * into the high half of its lane by one word permute that zeroes the low halves (AVX512BW's vpermw),
 * so one instruction per 16 elements besides the load, against avx512_load_half's two; the lanes
 * are avx512_load_half's, so a dot product over them sums in the same order (few_rows_scores.h). */
static inline __attribute__((always_inline)) void avx512_load_bf16_run(const uint16_t *p, __m512 *lo,
                                                                       __m512 *hi)
{
    const __m512i up = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0, 6, 0, 5,
                                        0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
    const __mmask32 high_halves = 0xaaaaaaaau;
    __m512i x = _mm512_loadu_si512((const void *)p);
    *lo = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(high_halves, up, x));
    *hi = _mm512_castsi512_ps(
        _mm512_maskz_permutexvar_epi16(high_halves, _mm512_add_epi16(up, _mm512_set1_epi16(16)), x));
}
#define V_LOAD_BF16_RUN(p, lo, hi)      avx512_load_bf16_run((p), (lo), (hi))
#define V_LOAD_BF16_PAIRS(p, even, odd) avx512_load_bf16_pairs((p), (even), (odd))
#define V_UNZIP(lo, hi, even, odd)      avx512_unzip((lo), (hi), (even), (odd))
#define V_ZIP(even, odd, lo, hi)        avx512_zip((even), (odd), (lo), (hi))

/* The sums of eight vectors' lanes, out[m] = V_REDUCE_ADD(v[m]) bit for bit: the same pairs added in
 * the same order (lane i with i + 8, then i + 4, i + 2, i + 1, the upper operand first as gcc's
 * _mm512_reduce_add_ps has it), but eight at a time in full vectors: 15 shuffles and 8 adds for the
 * eight, against 4 extracts or shuffles and 4 adds each (few_rows_scores.h: a decode step's
 * scores reduce once per key). */
static inline __attribute__((always_inline)) void avx512_reduce_add_8(const __m512 v[8], float out[8])
{
    __m512 b[4], c[2];
    /* unrolled, so that b and c stay in registers at -O2 too */
    _Pragma("GCC unroll 4") for (int m = 0; m < 4; m++) /* lanes i + 8: [v 2m's 8 sums | v 2m+1's] */
        b[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0xee),
                             _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0x44));
    _Pragma("GCC unroll 2") for (int m = 0; m < 2; m++) /* lanes i + 4: quarter q holds v 4m+q's 4 sums */
        c[m] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * m], b[2 * m + 1], 0xdd),
                             _mm512_shuffle_f32x4(b[2 * m], b[2 * m + 1], 0x88));
    /* lanes i + 2, then i + 1: quarter q's lane 0 holds v q's sum, lane 2 v q+4's */
    __m512 d = _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], 0x44), _mm512_shuffle_ps(c[0], c[1], 0xee));
    __m512 e = _mm512_add_ps(d, _mm512_permute_ps(d, 0xb1));
    _Alignas(64) float lanes[16];
    _mm512_store_ps(lanes, e);
    _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++)
    {
        out[q] = lanes[4 * q];
        out[q + 4] = lanes[4 * q + 2];
    }
}
#define V_REDUCE_ADD_8(v, out) avx512_reduce_add_8((v), (out))

#include "kernels/avx512/avx512_transpose.h"
#define V_TRANSPOSE(v) avx512_transpose_f32(v)
/* softcap: the vector tanh of kernels/score_mods.h */
#define FA_TANH_VECTOR 1

#include "avx512_tiles.h"
