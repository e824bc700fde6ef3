/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX-512F kernels for double: the vector vocabulary, then the shared template. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"
#include "kernels/exp2_poly.h"
#include "kernels/ref/ref.h" /* modify, scale_grad: the portable ones until this table has its own */

typedef __m512d vec;
typedef __mmask8 mask;
#define FA_T double
#define FA_SFX f64
#define FA_LANES 8
#define V_LOAD(p) _mm512_load_pd(p)
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


#include "avx512_tiles.h"
