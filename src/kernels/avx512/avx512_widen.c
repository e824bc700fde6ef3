/* SPDX-License-Identifier: BSD-3-Clause */
/* The avx512 table's widening of stored rows to float (kernels.h, widen), compiled with -mavx512f
 * -mavx512bw: sixteen elements per conversion (avx512_stored.h), the last few of a row one at a time
 * (kernels/quant.h), which gives the same values; then the row's scale, one multiplication. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/avx512_stored.h"
#include "kernels/quant.h"

void fa_avx512_widen_f32(int64_t rows, int64_t dim, const void *src, int64_t src_stride, fa_dtype from,
                         const float *scale, int64_t scale_stride, float *dst, int64_t dst_stride)
{
    const int64_t elem = fa_stored_size(from);
    for (int64_t r = 0; r < rows; r++) {
        const char *s = (const char *)src + r * src_stride * elem;
        const float *sr = scale ? scale + r * scale_stride : NULL;
        const __m512 sv = _mm512_set1_ps(sr ? *sr : 1.0f);
        float *d = dst + r * dst_stride;
        int64_t x = 0;
        for (; x + 32 <= dim; x += 32) { /* two independent conversions per step */
            __m512 a = avx512_load_stored(s + x * elem, 16, from), b = avx512_load_stored(s + (x + 16) * elem, 16, from);
            if (sr) a = _mm512_mul_ps(sv, a), b = _mm512_mul_ps(sv, b);
            _mm512_storeu_ps(d + x, a);
            _mm512_storeu_ps(d + x + 16, b);
        }
        for (; x + 16 <= dim; x += 16) {
            __m512 a = avx512_load_stored(s + x * elem, 16, from);
            _mm512_storeu_ps(d + x, sr ? _mm512_mul_ps(sv, a) : a);
        }
        for (; x < dim; x++) d[x] = fa_stored_value(from, s, x, sr);
    }
}
