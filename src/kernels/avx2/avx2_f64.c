/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX2+FMA kernels for double: what differs from the other element type,
 * then the template (avx2_tiles.h). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx2/avx2.h"
#include "kernels/exp2_poly.h"

typedef __m256d vec;
#define FA_T        double
#define FA_SFX      f64
#define FA_PS       pd
#define FA_LANES    4
#define FA_WIDEN_OP NULL /* simd/table.h */

/* The sum of a vector's lanes: halves added pairwise (the order is fixed, so is the result). */
static inline double avx2_reduce_add_f64(__m256d v)
{
    __m128d x = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    x = _mm_add_sd(x, _mm_unpackhi_pd(x, x));
    return _mm_cvtsd_f64(x);
}
#define V_REDUCE_ADD(v) avx2_reduce_add_f64(v)

/* Lanes [0, n) as a maskload/maskstore mask, n in [0, FA_LANES]. */
#define V_TAIL(n) _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)(n)), _mm256_setr_epi64x(0, 1, 2, 3))
/* exp2's split x = n + f without a rounding instruction: adding 1.5·2^52 + 1023 to x in
 * [-1022, 1024] rounds it to an integer n (to nearest) and leaves n + 1023 in the low mantissa bits
 * (AVX2 has no double -> int64 conversion); subtracting it back gives n exactly, and shifting those
 * bits into the exponent field gives 2^n (n = -1022: field 1, DBL_MIN; n = 1024: field 2047, +inf). */
#define FA_EXP2_SHIFT        (0x1.8p52 + 1023.0)
#define V_POW2_OF_SHIFTED(t) _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(t), 52))

#define FA_EXP2_COEF fa_exp2_coef_f64

#include "kernels/avx2/avx2_transpose.h"
#define V_TRANSPOSE(v) avx2_transpose_f64(v)
/* softcap: libm's tanh per lane (kernels/score_mods.h) */
#define FA_TANH_VECTOR 0

#include "avx2_tiles.h"
