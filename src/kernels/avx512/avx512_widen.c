/* SPDX-License-Identifier: BSD-3-Clause */
/* The avx512 table's widening of bf16/f16 rows to float (kernels.h, widen), compiled with
 * -mavx512f: sixteen elements per instruction, the last few of a row one at a time
 * (kernels/half.h), which gives the same values. Both conversions are exact. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"
#include "kernels/half.h"

/* bf16 is the top half of a float: zero-extend and shift. f16 through vcvtph2ps, which converts
 * subnormals exactly whatever MXCSR says and makes a signalling NaN quiet, as half.h does. */
static inline __m512 widen16(const uint16_t *src, fa_dtype from)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)src);
    if (from == FA_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

void fa_avx512_widen_f32(int64_t rows, int64_t dim, const uint16_t *src, int64_t src_stride, fa_dtype from,
                         float *dst, int64_t dst_stride)
{
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *s = src + r * src_stride;
        float *d = dst + r * dst_stride;
        int64_t x = 0;
        for (; x + 32 <= dim; x += 32) { /* two independent conversions per step */
            __m512 a = widen16(s + x, from), b = widen16(s + x + 16, from);
            _mm512_storeu_ps(d + x, a);
            _mm512_storeu_ps(d + x + 16, b);
        }
        for (; x + 16 <= dim; x += 16) _mm512_storeu_ps(d + x, widen16(s + x, from));
        for (; x < dim; x++) d[x] = from == FA_BF16 ? fa_bf16_to_f32(s[x]) : fa_f16_to_f32(s[x]);
    }
}
