/* SPDX-License-Identifier: BSD-3-Clause */
/* The neon table's widening of bf16/f16 rows to float (kernels.h, widen), which the sve table
 * shares (a row is streamed once; 128-bit vectors keep up with memory): eight elements per step, the
 * last few of a row one at a time (kernels/half.h), which gives the same values. Both conversions
 * are exact: bf16 is the upper half of a float, and FCVTL converts f16 subnormals exactly and makes
 * a signalling NaN quiet, as half.h does. */
#include <arm_neon.h>
#include <stdint.h>

#include "kernels/half.h"
#include "kernels/neon/neon.h"

void fa_neon_widen_f32(int64_t rows, int64_t dim, const uint16_t *src, int64_t src_stride, fa_dtype from,
                       float *dst, int64_t dst_stride)
{
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *s = src + r * src_stride;
        float *d = dst + r * dst_stride;
        int64_t x = 0;
        if (from == FA_BF16)
            for (; x + 8 <= dim; x += 8) {
                uint16x8_t h = vld1q_u16(s + x);
                vst1q_f32(d + x, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)));
                vst1q_f32(d + x + 4, vreinterpretq_f32_u32(vshll_high_n_u16(h, 16)));
            }
        else
            for (; x + 8 <= dim; x += 8) {
                float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(s + x));
                vst1q_f32(d + x, vcvt_f32_f16(vget_low_f16(h)));
                vst1q_f32(d + x + 4, vcvt_high_f32_f16(h));
            }
        for (; x < dim; x++) d[x] = from == FA_BF16 ? fa_bf16_to_f32(s[x]) : fa_f16_to_f32(s[x]);
    }
}
