/* SPDX-License-Identifier: BSD-3-Clause */
/* Floats rounded to bf16 by BFCVTN (FEAT_BF16), for the files of the neon_bf16 set compiled for it.
 * BFCVTN, unlike BFDOT, honours FPCR as float arithmetic does: Linux's default, to nearest even,
 * subnormals kept, NaN quiet, as kernels/half.h's fa_bf16_from_f32. The dot-product units' rule,
 * subnormals to zero (kernels.h, rows_of), is applied first where a value may be one. */
#ifndef FA_KERNELS_NEON_BF16_ROUND_H
#define FA_KERNELS_NEON_BF16_ROUND_H

#include <arm_neon.h>
#include <float.h>
#include <stdint.h>

/* x with every |lane| below the smallest normal made a zero of its sign (NaN compares false: kept). */
static inline __attribute__((always_inline)) float32x4_t fa_neon_bf16_flush(float32x4_t x)
{
    const uint32x4_t tiny = vcaltq_f32(x, vdupq_n_f32(FLT_MIN));
    const float32x4_t sign =
        vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u)));
    return vbslq_f32(tiny, sign, x);
}

/* 4 floats to 4 bf16, to nearest even. */
static inline __attribute__((always_inline)) uint16x4_t fa_neon_bf16_round(float32x4_t x)
{
    return vreinterpret_u16_bf16(vcvt_bf16_f32(x));
}

/* Keys c and c + 1 of 4 rows, rounded and interleaved word by word (ST2): p0[0] p1[0] p0[1] ... */
static inline __attribute__((always_inline)) void fa_neon_bf16_pairs_store(uint16_t *dst, float32x4_t p0,
                                                                           float32x4_t p1)
{
    uint16x4x2_t pair = {{fa_neon_bf16_round(p0), fa_neon_bf16_round(p1)}};
    vst2_u16(dst, pair);
}

#endif
