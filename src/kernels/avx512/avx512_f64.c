/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX-512F kernels for double: the vector vocabulary, then the shared template. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"
#include "kernels/exp2_poly.h"

typedef __m512d vec;
typedef __mmask8 mask;
#define FA_T double
#define FA_SFX f64
#define FA_LANES 8
#define V_LOAD(p) _mm512_load_pd(p)
#define V_LOADU(p) _mm512_loadu_pd(p)
#define V_LOADU_MASKZ(m, p) _mm512_maskz_loadu_pd((m), (p))
#define V_STORE(p, v) _mm512_store_pd((p), (v))
#define V_STOREU(p, v) _mm512_storeu_pd((p), (v))
#define V_STOREU_MASK(p, m, v) _mm512_mask_storeu_pd((p), (m), (v))
#define V_SET1(x) _mm512_set1_pd(x)
#define V_ZERO() _mm512_setzero_pd()
#define V_FMA(a, b, c) _mm512_fmadd_pd((a), (b), (c))
#define V_ADD(a, b) _mm512_add_pd((a), (b))
#define V_SUB(a, b) _mm512_sub_pd((a), (b))
#define V_MUL(a, b) _mm512_mul_pd((a), (b))
#define V_DIV(a, b) _mm512_div_pd((a), (b))
/* bitwise, on the integer view (AVX-512F has no double and/or; DQ does, which this table does not need) */
#define V_BITS(op, a, b) _mm512_castsi512_pd(op(_mm512_castpd_si512(a), _mm512_castpd_si512(b)))
#define V_AND(a, b) V_BITS(_mm512_and_epi64, (a), (b))
#define V_OR(a, b) V_BITS(_mm512_or_epi64, (a), (b))
#define V_ANDNOT(a, b) V_BITS(_mm512_andnot_epi64, (a), (b)) /* ~a & b */
#define V_MAX(a, b) _mm512_max_pd((a), (b))
#define V_MASKZ_SCALEF(m, a, b) _mm512_maskz_scalef_pd((m), (a), (b))
#define V_MASKZ_ROUND(m, a) \
    _mm512_maskz_roundscale_pd((m), (a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_MASKZ_SUB(m, a, b) _mm512_maskz_sub_pd((m), (a), (b))
#define V_MASK_BLEND(m, a, b) _mm512_mask_blend_pd((m), (a), (b))
#define V_REDUCE_ADD(a) _mm512_reduce_add_pd(a)
#define V_CMP(a, b, op) _mm512_cmp_pd_mask((a), (b), (op))

/* 2^-1022 = DBL_MIN: exp2 below it is flushed to +0 (avx512_tiles.h says why) */
#define FA_EXP2_LOW (-1022.0)
#define FA_EXP2_COEF fa_exp2_coef_f64
#define FA_EXP2_DEGREE FA_EXP2_DEGREE_F64

/* v[i] lane j -> v[j] lane i, 8 x 8: pairs of rows interleaved (unpack pd), then 128-bit lanes
 * gathered in two rounds of shuffle_f64x2: 24 shuffles, 3 a vector. */
static inline void avx512_transpose_f64(__m512d v[8])
{
    __m512d t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_pd(v[i], v[i + 1]);     /* lane l: v[i][2l], v[i+1][2l] */
        t[i + 1] = _mm512_unpackhi_pd(v[i], v[i + 1]); /* lane l: v[i][2l+1], v[i+1][2l+1] */
    }
    /* u[h + j] (h = 0, 4): columns j and j + 4 of rows h..h + 3, as 128-bit lanes (rows h, h + 1 of
     * column j), (the same of column j + 4), (rows h + 2, h + 3 of column j), (the same of j + 4) */
    for (int h = 0; h < 8; h += 4)
        for (int k = 0; k < 2; k++) {
            u[h + k] = _mm512_shuffle_f64x2(t[h + k], t[h + 2 + k], 0x88);
            u[h + 2 + k] = _mm512_shuffle_f64x2(t[h + k], t[h + 2 + k], 0xdd);
        }
    for (int k = 0; k < 4; k++) {
        v[k] = _mm512_shuffle_f64x2(u[k], u[4 + k], 0x88);
        v[4 + k] = _mm512_shuffle_f64x2(u[k], u[4 + k], 0xdd);
    }
}
#define V_TRANSPOSE(v) avx512_transpose_f64(v)
/* softcap: libm's tanh per lane (kernels/score_mods.h) */
#define FA_TANH_VECTOR 0


#include "avx512_tiles.h"
