/* SPDX-License-Identifier: BSD-3-Clause */
/* The neon table's widening of stored rows to float (kernels.h, widen), which the sve table shares
 * (a row is streamed once; 128-bit vectors keep up with memory): eight elements per step
 * (neon_stored.h), the last few of a row one at a time (kernels/quant.h), which gives the same
 * values; then the row's scale, one multiplication. Every conversion is exact (neon_stored.h says
 * how each matches kernels/half.h and kernels/quant.h). A row without a scale is converted with no
 * multiplication at all, as simd/widen.h does for x86: a select between sv·a and a with sv = 1 may be folded
 * to sv·a by the compiler (clang does), and FMUL quiets a signalling NaN that ref keeps (a bf16 row's
 * conversion is a shift, which keeps it). */
#include <arm_neon.h>
#include <stdint.h>

#include "kernels/neon/neon.h"
#include "kernels/neon/neon_stored.h"
#include "kernels/quant.h"

/* Elements [x, x + 8) of row s as two vectors. */
static inline __attribute__((always_inline)) void neon_widen8(const char *s, int64_t x, fa_dtype from,
                                                              float32x4_t *lo, float32x4_t *hi)
{
    uint16x8_t h;
    if (from == FA_BF16 || from == FA_F16)
        h = vld1q_u16((const uint16_t *)(const void *)s + x);
    else
        h = neon_bytes_to_lanes(vld1_u8((const uint8_t *)s + x));
    *lo = neon_widen4(vget_low_u16(h), from);
    *hi = neon_widen4(vget_high_u16(h), from);
}

/* One row; `scaled` is a constant at each call, so the unscaled copy has no multiplication, and
 * `from` is one at each of fa_neon_widen_f32's calls, so each type's loop has its conversion only. */
static inline __attribute__((always_inline)) void neon_widen_row(const char *s, int64_t dim, fa_dtype from,
                                                                 const float *sr, int scaled, float *d)
{
    const float32x4_t sv = vdupq_n_f32(scaled ? *sr : 0.0f);
    int64_t x = 0;
    for (; x + 8 <= dim; x += 8) {
        float32x4_t a, b;
        neon_widen8(s, x, from, &a, &b);
        if (scaled) a = vmulq_f32(sv, a), b = vmulq_f32(sv, b);
        vst1q_f32(d + x, a);
        vst1q_f32(d + x + 4, b);
    }
    for (; x < dim; x++) d[x] = fa_stored_value(from, s, x, scaled ? sr : NULL);
}

static inline __attribute__((always_inline)) void neon_widen_rows(int64_t rows, int64_t dim, const void *src,
                                                                  int64_t src_stride, fa_dtype from,
                                                                  const float *scale, int64_t scale_stride,
                                                                  float *dst, int64_t dst_stride)
{
    const int64_t elem = fa_stored_size(from);
    for (int64_t r = 0; r < rows; r++) {
        const char *s = (const char *)src + r * src_stride * elem;
        float *d = dst + r * dst_stride;
        if (scale)
            neon_widen_row(s, dim, from, scale + r * scale_stride, 1, d);
        else
            neon_widen_row(s, dim, from, NULL, 0, d);
    }
}

void fa_neon_widen_f32(int64_t rows, int64_t dim, const void *src, int64_t src_stride, fa_dtype from,
                       const float *scale, int64_t scale_stride, float *dst, int64_t dst_stride)
{
    switch (from) {
    case FA_BF16:
        neon_widen_rows(rows, dim, src, src_stride, FA_BF16, scale, scale_stride, dst, dst_stride);
        break;
    case FA_F16:
        neon_widen_rows(rows, dim, src, src_stride, FA_F16, scale, scale_stride, dst, dst_stride);
        break;
    case FA_I8:
        neon_widen_rows(rows, dim, src, src_stride, FA_I8, scale, scale_stride, dst, dst_stride);
        break;
    case FA_F8_E4M3:
        neon_widen_rows(rows, dim, src, src_stride, FA_F8_E4M3, scale, scale_stride, dst, dst_stride);
        break;
    default:
        neon_widen_rows(rows, dim, src, src_stride, FA_F8_E5M2, scale, scale_stride, dst, dst_stride);
        break;
    }
}
