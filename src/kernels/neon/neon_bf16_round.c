/* SPDX-License-Identifier: BSD-3-Clause */
/* The neon_bf16 set's conversions of P and dS to bf16 (fa_kernels_bf16.rows_of and pairs_of), by
 * BFCVTN after flushing subnormals (neon_bf16_round.h): ref's bytes, 4 values an instruction. */
#include <string.h>

#include "kernels/neon/neon_bf16.h"
#include "kernels/neon/neon_bf16_round.h"
#include "kernels/ref/ref.h"

void fa_neon_bf16_rows_of(int64_t n, const float *src, uint16_t *dst)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1_u16(dst + i, fa_neon_bf16_round(fa_neon_bf16_flush(vld1q_f32(src + i))));
    if (i < n) { /* the last 1-3 values, through a vector's worth of buffer: nothing past n is touched */
        float in[4] = {0};
        uint16_t out[4];
        memcpy(in, src + i, (size_t)(n - i) * sizeof(float));
        vst1_u16(out, fa_neon_bf16_round(fa_neon_bf16_flush(vld1q_f32(in))));
        memcpy(dst + i, out, (size_t)(n - i) * sizeof(uint16_t));
    }
}

/* ld is a multiple of FA_PAD_ELEMS_F32 (a score tile's), so rows go 4 at a time with no tail. */
void fa_neon_bf16_pairs_of(int64_t ld, int64_t cols, const float *p, uint16_t *pp)
{
    const int64_t c_pad = (cols + FA_REF_BF16_PAD_K - 1) / FA_REF_BF16_PAD_K * FA_REF_BF16_PAD_K;
    const float32x4_t zero = vdupq_n_f32(0.0f);
    for (int64_t c = 0; c < c_pad; c += 2)
        for (int64_t r = 0; r < ld; r += 4) {
            float32x4_t p0 = c < cols ? fa_neon_bf16_flush(vld1q_f32(p + c * ld + r)) : zero;
            float32x4_t p1 = c + 1 < cols ? fa_neon_bf16_flush(vld1q_f32(p + (c + 1) * ld + r)) : zero;
            fa_neon_bf16_pairs_store(pp + (c / 2) * 2 * ld + 2 * r, p0, p1);
        }
}
