/* AVX-512F kernels for double: the vector vocabulary, then the shared template. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"

typedef __m512d vec;
typedef __mmask8 mask;
#define FA_T double
#define FA_SFX f64
#define FA_VEC 8
#define V_LOAD(p) _mm512_load_pd(p)
#define V_LOADU_MASKZ(m, p) _mm512_maskz_loadu_pd((m), (p))
#define V_STORE(p, v) _mm512_store_pd((p), (v))
#define V_STOREU(p, v) _mm512_storeu_pd((p), (v))
#define V_SET1(x) _mm512_set1_pd(x)
#define V_ZERO() _mm512_setzero_pd()
#define V_FMA(a, b, c) _mm512_fmadd_pd((a), (b), (c))
#define V_ADD(a, b) _mm512_add_pd((a), (b))
#define V_SUB(a, b) _mm512_sub_pd((a), (b))
#define V_MUL(a, b) _mm512_mul_pd((a), (b))
#define V_MAX(a, b) _mm512_max_pd((a), (b))
#define V_SCALEF(a, b) _mm512_scalef_pd((a), (b))
#define V_ROUND(a) _mm512_roundscale_pd((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_MASK_BLEND(m, a, b) _mm512_mask_blend_pd((m), (a), (b))
#define V_MASKZ_MOV(m, a) _mm512_maskz_mov_pd((m), (a))
#define V_REDUCE_ADD(a) _mm512_reduce_add_pd(a)
#define V_CMP(a, b, op) _mm512_cmp_pd_mask((a), (b), (op))

/* 2^-1100 rounds to 0 in double */
#define FA_EXP2_LOW (-1100.0)
/* 2^f = e^(f ln 2), Taylor to degree 13 (coefficients ln2^k / k!): truncation below 7e-18 relative
 * on |f| <= 1/2, so the result is within a few ulp: the exactness mode stays exact. */
static inline __attribute__((always_inline)) __m512d exp2_poly_f64(__m512d f)
{
    static const double c[14] = {1.0,
                                  0.6931471805599453,
                                  0.2402265069591007,
                                  0.055504108664821576,
                                  0.009618129107628477,
                                  0.0013333558146428441,
                                  0.00015403530393381606,
                                  1.5252733804059838e-05,
                                  1.3215486790144305e-06,
                                  1.0178086009239696e-07,
                                  7.054911620801121e-09,
                                  4.44553827187081e-10,
                                  2.5678435993488196e-11,
                                  1.3691488853904124e-12};
    __m512d p = _mm512_set1_pd(c[13]);
    for (int i = 12; i >= 0; i--) p = _mm512_fmadd_pd(p, f, _mm512_set1_pd(c[i]));
    return p;
}
#define FA_EXP2_POLY(f) exp2_poly_f64(f)

/* the largest head dim the API accepts */
#define FA_MAX_DIM 512

#include "avx512_tiles.h"
