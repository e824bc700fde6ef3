/* SPDX-License-Identifier: BSD-3-Clause */
/* The avx2 table's widening of bf16/f16 rows to float (kernels.h, widen), compiled with -mavx2
 * -mf16c: eight elements per instruction, the last few of a row one at a time (kernels/half.h),
 * which gives the same values. Both conversions are exact. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/avx2/avx2.h"
#include "kernels/half.h"

/* bf16 is the top half of a float: zero-extend and shift. f16 through F16C's vcvtph2ps, which
 * converts subnormals exactly whatever MXCSR says and makes a signalling NaN quiet, as half.h does. */
static inline __m256 widen8(const uint16_t *src, fa_dtype from)
{
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)src);
    if (from == FA_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

void fa_avx2_widen_f32(int64_t rows, int64_t dim, const uint16_t *src, int64_t src_stride, fa_dtype from,
                       float *dst, int64_t dst_stride)
{
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *s = src + r * src_stride;
        float *d = dst + r * dst_stride;
        int64_t x = 0;
        for (; x + 16 <= dim; x += 16) { /* two independent conversions per step */
            __m256 a = widen8(s + x, from), b = widen8(s + x + 8, from);
            _mm256_storeu_ps(d + x, a);
            _mm256_storeu_ps(d + x + 8, b);
        }
        for (; x + 8 <= dim; x += 8) _mm256_storeu_ps(d + x, widen8(s + x, from));
        for (; x < dim; x++) d[x] = from == FA_BF16 ? fa_bf16_to_f32(s[x]) : fa_f16_to_f32(s[x]);
    }
}
