/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX2+FMA kernels for float: what differs from the other element type,
 * then the template (avx2_tiles.h). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx2/avx2.h"
#include "kernels/exp2_poly.h"

typedef __m256 vec;
#define FA_T        float
#define FA_SFX      f32
#define FA_PS       ps
#define FA_LANES    8
#define FA_WIDEN_OP fa_avx2_widen_f32 /* simd/table.h */

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

#include "kernels/avx2/avx2_transpose.h"
#define V_TRANSPOSE(v) avx2_transpose_f32(v)
/* softcap: the vector tanh of kernels/score_mods.h */
#define FA_TANH_VECTOR 1

#include "avx2_tiles.h"
