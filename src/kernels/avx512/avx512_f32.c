/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX-512F kernels for float: the vector vocabulary, then the shared template. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"
#include "kernels/exp2_poly.h"

typedef __m512 vec;
typedef __mmask16 mask;
#define FA_T float
#define FA_SFX f32
#define FA_LANES 16
#define V_LOAD(p) _mm512_load_ps(p)
#define V_LOADU(p) _mm512_loadu_ps(p)
#define V_LOADU_MASKZ(m, p) _mm512_maskz_loadu_ps((m), (p))
#define V_STORE(p, v) _mm512_store_ps((p), (v))
#define V_STOREU(p, v) _mm512_storeu_ps((p), (v))
#define V_STOREU_MASK(p, m, v) _mm512_mask_storeu_ps((p), (m), (v))
#define V_SET1(x) _mm512_set1_ps(x)
#define V_ZERO() _mm512_setzero_ps()
#define V_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define V_ADD(a, b) _mm512_add_ps((a), (b))
#define V_SUB(a, b) _mm512_sub_ps((a), (b))
#define V_MUL(a, b) _mm512_mul_ps((a), (b))
#define V_DIV(a, b) _mm512_div_ps((a), (b))
/* bitwise, on the integer view (AVX-512F has no float and/or; DQ does, which this table does not need) */
#define V_BITS(op, a, b) _mm512_castsi512_ps(op(_mm512_castps_si512(a), _mm512_castps_si512(b)))
#define V_AND(a, b) V_BITS(_mm512_and_epi32, (a), (b))
#define V_OR(a, b) V_BITS(_mm512_or_epi32, (a), (b))
#define V_ANDNOT(a, b) V_BITS(_mm512_andnot_epi32, (a), (b)) /* ~a & b */
#define V_MAX(a, b) _mm512_max_ps((a), (b))
#define V_MASKZ_SCALEF(m, a, b) _mm512_maskz_scalef_ps((m), (a), (b))
#define V_MASKZ_ROUND(m, a) \
    _mm512_maskz_roundscale_ps((m), (a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_MASKZ_SUB(m, a, b) _mm512_maskz_sub_ps((m), (a), (b))
#define V_MASK_BLEND(m, a, b) _mm512_mask_blend_ps((m), (a), (b))
#define V_REDUCE_ADD(a) _mm512_reduce_add_ps(a)
#define V_CMP(a, b, op) _mm512_cmp_ps_mask((a), (b), (op))

/* 2^-126 = FLT_MIN: exp2 below it is flushed to +0 (avx512_tiles.h says why) */
#define FA_EXP2_LOW (-126.0f)
#define FA_EXP2_COEF fa_exp2_coef_f32
#define FA_EXP2_DEGREE FA_EXP2_DEGREE_F32

/* v[i] lane j -> v[j] lane i, 16 x 16: pairs of rows interleaved (unpack ps), then pairs of pairs
 * (unpack pd), then 128-bit lanes gathered in two rounds of shuffle_f32x4: 64 shuffles, 4 a vector. */
static inline void avx512_transpose_f32(__m512 v[16])
{
    __m512 t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
    }
    /* u[g + k] (g = 0, 4, 8, 12), 128-bit lane l: column 4l + k of rows g..g + 3 */
    for (int g = 0; g < 16; g += 4) {
        __m512d a = _mm512_castps_pd(t[g]), b = _mm512_castps_pd(t[g + 2]), c = _mm512_castps_pd(t[g + 1]),
                d = _mm512_castps_pd(t[g + 3]);
        u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
        u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
    }
    for (int k = 0; k < 4; k++) {
        __m512 lo01 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88), hi01 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xdd);
        __m512 lo23 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88),
               hi23 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xdd);
        v[k] = _mm512_shuffle_f32x4(lo01, lo23, 0x88);
        v[8 + k] = _mm512_shuffle_f32x4(lo01, lo23, 0xdd);
        v[4 + k] = _mm512_shuffle_f32x4(hi01, hi23, 0x88);
        v[12 + k] = _mm512_shuffle_f32x4(hi01, hi23, 0xdd);
    }
}
#define V_TRANSPOSE(v) avx512_transpose_f32(v)
/* softcap: the vector tanh of kernels/score_mods.h */
#define FA_TANH_VECTOR 1


#include "avx512_tiles.h"
