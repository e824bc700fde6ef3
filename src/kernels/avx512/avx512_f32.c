/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX-512F kernels for float: the vector vocabulary, then the shared template. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"
#include "kernels/exp2_poly.h"
#include "kernels/ref/ref.h" /* modify, scale_grad: the portable ones until this table has its own */

typedef __m512 vec;
typedef __mmask16 mask;
#define FA_T float
#define FA_SFX f32
#define FA_LANES 16
#define V_LOAD(p) _mm512_load_ps(p)
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


#include "avx512_tiles.h"
