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
#define FA_T float
#define FA_SFX f32
#define FA_PS ps
#define FA_LANES 16
#define FA_WIDEN_OP fa_avx512_widen_f32 /* simd/table.h */

#define FA_EXP2_COEF fa_exp2_floor_coef_f32
#define FA_EXP2_FLOOR 1

/* Lanes [0, n) of a vector widened from bf16 (zero-extended into the upper half of each lane) or
 * f16 (vcvtph2ps: exact, subnormals included), the rest 0 (kernels/simd/half_operands.h). A short
 * last chunk goes through a zeroed buffer, so nothing past p + n is read (AVX-512F has no masked
 * 16-bit load). */
static inline __attribute__((always_inline)) __m512 avx512_load_half(const uint16_t *p, int64_t n, int bf16)
{
    __m256i h;
    if (n >= 16) {
        h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    } else {
        _Alignas(32) uint16_t part[16] = {0};
        for (int64_t i = 0; i < n; i++) part[i] = p[i];
        h = _mm256_load_si256((const __m256i *)(const void *)part);
    }
    return bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
}
#define V_LOAD_HALF(p, n, bf16) avx512_load_half((p), (n), (bf16))
#define FA_HALF_VECS            4 /* 4 rows x 4 vectors + 4 x vectors + a broadcast */
#define FA_HALF_VECS_FEW        8 /* for 1 or 2 rows: 2 x 8 + 8 + 1 */

#include "kernels/avx512/avx512_transpose.h"
#define V_TRANSPOSE(v) avx512_transpose_f32(v)
/* softcap: the vector tanh of kernels/score_mods.h */
#define FA_TANH_VECTOR 1

#include "avx512_tiles.h"
