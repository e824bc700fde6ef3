/* SPDX-License-Identifier: BSD-3-Clause */
/* The avx2 table's widening of stored rows to float (kernels.h, widen), compiled with -mavx2
 * -mf16c: eight elements per conversion (avx2_stored.h), the last few of a row one at a time
 * (kernels/quant.h), which gives the same values; then the row's scale, one multiplication.
 * A row without a scale is converted with no multiplication at all: a select between sv·a and a
 * with sv = 1 may be folded to sv·a by the compiler (clang does), which quiets a signalling NaN
 * that ref keeps. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/avx2_stored.h"
#include "kernels/quant.h"

/* One row; `scaled` is a constant at each call, so the unscaled copy has no multiplication. */
static inline __attribute__((always_inline)) void
avx2_widen_row(const char *s, int64_t dim, fa_dtype from, int64_t elem, const float *sr, int scaled, float *d)
{
    const __m256 sv = _mm256_set1_ps(scaled ? *sr : 0.0f);
    int64_t x = 0;
    for (; x + 16 <= dim; x += 16) { /* two independent conversions per step */
        __m256 a = avx2_load_stored(s + x * elem, 8, from), b = avx2_load_stored(s + (x + 8) * elem, 8, from);
        if (scaled) a = _mm256_mul_ps(sv, a), b = _mm256_mul_ps(sv, b);
        _mm256_storeu_ps(d + x, a);
        _mm256_storeu_ps(d + x + 8, b);
    }
    for (; x + 8 <= dim; x += 8) {
        __m256 a = avx2_load_stored(s + x * elem, 8, from);
        if (scaled) a = _mm256_mul_ps(sv, a);
        _mm256_storeu_ps(d + x, a);
    }
    for (; x < dim; x++) d[x] = fa_stored_value(from, s, x, scaled ? sr : NULL);
}

void fa_avx2_widen_f32(int64_t rows, int64_t dim, const void *src, int64_t src_stride, fa_dtype from,
                       const float *scale, int64_t scale_stride, float *dst, int64_t dst_stride)
{
    const int64_t elem = fa_stored_size(from);
    for (int64_t r = 0; r < rows; r++) {
        const char *s = (const char *)src + r * src_stride * elem;
        float *d = dst + r * dst_stride;
        if (scale)
            avx2_widen_row(s, dim, from, elem, scale + r * scale_stride, 1, d);
        else
            avx2_widen_row(s, dim, from, elem, NULL, 0, d);
    }
}
