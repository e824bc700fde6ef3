/* SPDX-License-Identifier: BSD-3-Clause */
/* The avx512 table's widening of stored rows to float (kernels.h, widen), compiled with -mavx512f
 * -mavx512bw: sixteen elements per conversion (avx512_stored.h), the last few of a row one at a time
 * (kernels/quant.h), which gives the same values; then the row's scale, one multiplication.
 * A row without a scale is converted with no multiplication at all: a select between sv·a and a
 * with sv = 1 may be folded to sv·a by the compiler (clang does), which quiets a signalling NaN
 * that ref keeps. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/avx512_stored.h"
#include "kernels/quant.h"

/* One row; `scaled` is a constant at each call, so the unscaled copy has no multiplication. */
static inline __attribute__((always_inline)) void avx512_widen_row(const char *s, int64_t dim, fa_dtype from,
                                                                   int64_t elem, const float *sr, int scaled,
                                                                   float *d)
{
    const __m512 sv = _mm512_set1_ps(scaled ? *sr : 0.0f);
    int64_t x = 0;
    for (; x + 32 <= dim; x += 32) { /* two independent conversions per step */
        __m512 a = avx512_load_stored(s + x * elem, 16, from),
               b = avx512_load_stored(s + (x + 16) * elem, 16, from);
        if (scaled) a = _mm512_mul_ps(sv, a), b = _mm512_mul_ps(sv, b);
        _mm512_storeu_ps(d + x, a);
        _mm512_storeu_ps(d + x + 16, b);
    }
    for (; x + 16 <= dim; x += 16) {
        __m512 a = avx512_load_stored(s + x * elem, 16, from);
        if (scaled) a = _mm512_mul_ps(sv, a);
        _mm512_storeu_ps(d + x, a);
    }
    for (; x < dim; x++) d[x] = fa_stored_value(from, s, x, scaled ? sr : NULL);
}

void fa_avx512_widen_f32(int64_t rows, int64_t dim, const void *src, int64_t src_stride, fa_dtype from,
                         const float *scale, int64_t scale_stride, float *dst, int64_t dst_stride)
{
    const int64_t elem = fa_stored_size(from);
    for (int64_t r = 0; r < rows; r++) {
        const char *s = (const char *)src + r * src_stride * elem;
        float *d = dst + r * dst_stride;
        if (scale)
            avx512_widen_row(s, dim, from, elem, scale + r * scale_stride, 1, d);
        else
            avx512_widen_row(s, dim, from, elem, NULL, 0, d);
    }
}
