/* AVX2+FMA kernels for double: the vector vocabulary, then the shared template. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx2/avx2.h"

typedef __m256d vec;
#define FA_T                 double
#define FA_SFX               f64
#define FA_VEC               4
#define V_LOAD(p)            _mm256_load_pd(p)
#define V_LOADU(p)           _mm256_loadu_pd(p)
#define V_MASKLOAD(p, m)     _mm256_maskload_pd((p), (m))
#define V_STORE(p, v)        _mm256_store_pd((p), (v))
#define V_STOREU(p, v)       _mm256_storeu_pd((p), (v))
#define V_MASKSTORE(p, m, v) _mm256_maskstore_pd((p), (m), (v))
#define V_SET1(x)            _mm256_set1_pd(x)
#define V_ZERO()             _mm256_setzero_pd()
#define V_FMA(a, b, c)       _mm256_fmadd_pd((a), (b), (c))
#define V_ADD(a, b)          _mm256_add_pd((a), (b))
#define V_SUB(a, b)          _mm256_sub_pd((a), (b))
#define V_MUL(a, b)          _mm256_mul_pd((a), (b))
#define V_MAX(a, b)          _mm256_max_pd((a), (b))
#define V_MIN(a, b)          _mm256_min_pd((a), (b))
#define V_AND(a, b)          _mm256_and_pd((a), (b))
#define V_OR(a, b)           _mm256_or_pd((a), (b))
#define V_BLENDV(a, b, m)    _mm256_blendv_pd((a), (b), (m))
#define V_CMP(a, b, op)      _mm256_cmp_pd((a), (b), (op))
#define V_MOVEMASK(m)        _mm256_movemask_pd(m)
/* Lanes [0, n) as a maskload/maskstore mask, n in [0, FA_VEC]. */
#define V_TAIL(n) _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)(n)), _mm256_setr_epi64x(0, 1, 2, 3))
/* exp2's split x = n + f without a rounding instruction: adding 1.5·2^52 + 1023 to x in
 * [-1023, 1024] rounds it to an integer n (to nearest) and leaves n + 1023 in the low mantissa bits
 * (AVX2 has no double -> int64 conversion); subtracting it back gives n exactly, and shifting those
 * bits into the exponent field gives 2^n (n = -1023: field 0, exactly +0; n = 1024: field 2047, +inf). */
#define FA_EXP2_SHIFT        (0x1.8p52 + 1023.0)
#define V_POW2_OF_SHIFTED(t) _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(t), 52))

/* The clamp: n = -1023 is the one n whose biased exponent is 0 (the built 2^n is +0, so
 * exp2(-inf) = 0), n = 1024 the one whose biased exponent is 2047 (+inf). */
#define FA_EXP2_LOW  (-1023.0)
#define FA_EXP2_HIGH (1024.0)
/* 2^f = e^(f ln 2), Taylor to degree 13 (the AVX-512 coefficients, ln2^k / k!): truncation below
 * 7e-18 relative on |f| <= 1/2, so the result is within a few ulp: the exactness mode stays exact. */
static inline __attribute__((always_inline)) __m256d exp2_poly_f64(__m256d f)
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
    __m256d p = _mm256_set1_pd(c[13]);
    for (int i = 12; i >= 0; i--) p = _mm256_fmadd_pd(p, f, _mm256_set1_pd(c[i]));
    return p;
}
#define FA_EXP2_POLY(f) exp2_poly_f64(f)

#include "avx2_tiles.h"
