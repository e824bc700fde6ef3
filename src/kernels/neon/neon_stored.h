/* SPDX-License-Identifier: BSD-3-Clause */
/* Elements of a stored type (kernels.h, widen: bf16, f16, int8, FP8 E4M3 and E5M2) as NEON float
 * vectors, converted exactly: the neon table's widen (neon_widen.c, which the sve table shares) and
 * its decode products (neon_f32.c, simd/half_operands.h) load them alike. Each conversion gives the
 * bits of the scalar one in kernels/half.h and kernels/quant.h, as avx2_stored.h's do on x86:
 *   bf16 is the upper half of a float (a shift);
 *   f16 through FCVTL, exact for subnormals (Linux leaves FPCR.FZ16 clear) and making a signalling
 *   NaN quiet with its payload, as half.h does;
 *   int8 sign-extended and converted (SCVTF, exact below 2^24);
 *   E5M2 is binary16's top byte: the byte shifted up, then FCVTL;
 *   E4M3's magnitude bits moved into binary16's exponent and mantissa fields are the same number
 *   times 2^-8 (its bias is 7, binary16's 15), subnormals included, so FCVTL and a multiplication by
 *   256 give it exactly; S.1111.111, E4M3's only NaN, would give ±480 and becomes the quiet NaN with
 *   its sign. */
#ifndef FA_NEON_STORED_H
#define FA_NEON_STORED_H

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "flashattn.h"

/* Four elements of stored type t, one a 16-bit lane of h (a one-byte element sign-extended into its
 * lane: every conversion below but int8's masks the upper byte off), converted. */
static inline __attribute__((always_inline)) float32x4_t neon_widen4(uint16x4_t h, fa_dtype t)
{
    if (t == FA_BF16) return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
    if (t == FA_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    if (t == FA_I8) return vcvtq_f32_s32(vmovl_s16(vreinterpret_s16_u16(h)));
    if (t == FA_F8_E5M2) return vcvt_f32_f16(vreinterpret_f16_u16(vshl_n_u16(h, 8)));
    const uint16x4_t low7 = vdup_n_u16(0x7f), top = vand_u16(h, vdup_n_u16(0x80)), mag = vand_u16(h, low7);
    const float32x4_t f =
        vmulq_f32(vcvt_f32_f16(vreinterpret_f16_u16(vorr_u16(vshl_n_u16(mag, 7), vshl_n_u16(top, 8)))),
                  vdupq_n_f32(256.0f));
    const uint32x4_t nan =
        vreinterpretq_u32_s32(vmovl_s16(vreinterpret_s16_u16(vceq_u16(mag, low7)))); /* all ones */
    const uint32x4_t quiet = vorrq_u32(vshlq_n_u32(vmovl_u16(top), 24), vdupq_n_u32(0x7fc00000u));
    return vbslq_f32(nan, vreinterpretq_f32_u32(quiet), f);
}

/* Eight one-byte elements, sign-extended into 16-bit lanes (neon_widen4's operand). */
static inline __attribute__((always_inline)) uint16x8_t neon_bytes_to_lanes(uint8x8_t b)
{
    return vreinterpretq_u16_s16(vmovl_s8(vreinterpret_s8_u8(b)));
}

/* Lanes [0, n) of the elements of stored type t at p (n >= 1; every lane for n >= 4), the others 0,
 * nothing past element n - 1 read (a short chunk goes through a zeroed buffer). */
static inline __attribute__((always_inline)) float32x4_t neon_load_stored(const void *p, int64_t n,
                                                                          fa_dtype t)
{
    if (t == FA_BF16 || t == FA_F16) {
        uint16x4_t h;
        if (n >= 4) {
            h = vld1_u16((const uint16_t *)p);
        } else {
            _Alignas(8) uint16_t part[4] = {0};
            for (int64_t i = 0; i < n; i++) part[i] = ((const uint16_t *)p)[i];
            h = vld1_u16(part);
        }
        return neon_widen4(h, t);
    }
    _Alignas(8) uint8_t part[8] = {0};
    if (n >= 4)
        memcpy(part, p, 4); /* one unaligned 32-bit load */
    else
        for (int64_t i = 0; i < n; i++) part[i] = ((const uint8_t *)p)[i];
    return neon_widen4(vget_low_u16(neon_bytes_to_lanes(vld1_u8(part))), t);
}

#endif
