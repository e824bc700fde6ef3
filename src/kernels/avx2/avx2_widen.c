/* SPDX-License-Identifier: BSD-3-Clause */
/* The avx2 table's widening of stored rows to float (kernels.h, widen), compiled with -mavx2
 * -mf16c: eight elements per conversion (avx2_stored.h), the last few of a row one at a time
 * (kernels/quant.h), which gives the same values; then the row's scale, one multiplication. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/avx2_stored.h"
#include "kernels/quant.h"

void fa_avx2_widen_f32(int64_t rows, int64_t dim, const void *src, int64_t src_stride, fa_dtype from,
                       const float *scale, int64_t scale_stride, float *dst, int64_t dst_stride)
{
    const int64_t elem = fa_stored_size(from);
    for (int64_t r = 0; r < rows; r++) {
        const char *s = (const char *)src + r * src_stride * elem;
        const float *sr = scale ? scale + r * scale_stride : NULL;
        const __m256 sv = _mm256_set1_ps(sr ? *sr : 1.0f);
        float *d = dst + r * dst_stride;
        int64_t x = 0;
        for (; x + 16 <= dim; x += 16) { /* two independent conversions per step */
            __m256 a = avx2_load_stored(s + x * elem, 8, from), b = avx2_load_stored(s + (x + 8) * elem, 8, from);
            if (sr) a = _mm256_mul_ps(sv, a), b = _mm256_mul_ps(sv, b);
            _mm256_storeu_ps(d + x, a);
            _mm256_storeu_ps(d + x + 8, b);
        }
        for (; x + 8 <= dim; x += 8) {
            __m256 a = avx2_load_stored(s + x * elem, 8, from);
            _mm256_storeu_ps(d + x, sr ? _mm256_mul_ps(sv, a) : a);
        }
        for (; x < dim; x++) d[x] = fa_stored_value(from, s, x, sr);
    }
}
