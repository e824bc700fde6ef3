/* SPDX-License-Identifier: BSD-3-Clause */
/* bfloat16 and IEEE binary16 elements, one at a time: the portable conversions that ref's widen
 * operation, the drivers' output rounding and the tests share.
 *
 * Widening (half -> float) is exact for both types (an f16 NaN is made quiet, as vcvtph2ps does; a
 * bf16 NaN keeps its bits). Narrowing (float -> half) rounds to nearest,
 * ties to even, once: a value beyond the largest finite half (after rounding) becomes ±inf,
 * values below the smallest normal become subnormals (f16; bf16 has float's exponent range, so
 * float subnormals become bf16 subnormals) or ±0, and a NaN stays a NaN with its sign and the top
 * bits of its payload, made quiet (what VCVTNEPS2BF16 and VCVTPS2PH do). The narrowing does not
 * depend on the floating-point environment except for the f16 subnormal case, which uses one
 * float addition in the default rounding mode (round to nearest even), the mode the library
 * computes in everywhere. */
#ifndef FA_KERNELS_HALF_H
#define FA_KERNELS_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t fa_half_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float fa_half_bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float fa_bf16_to_f32(uint16_t h)
{
    return fa_half_bits_float((uint32_t)h << 16);
}

static inline float fa_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    if (exponent == 0x1f) /* inf; a NaN keeps sign and payload and is made quiet, as vcvtph2ps does */
        return fa_half_bits_float(sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0));
    if (exponent != 0) return fa_half_bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    /* zero or subnormal: mantissa·2^-24, exact in float */
    return fa_half_bits_float(sign | fa_half_float_bits((float)mantissa * 0x1p-24f));
}

static inline uint16_t fa_bf16_from_f32(float f)
{
    uint32_t u = fa_half_float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* NaN: quiet */
    /* add half an ulp of bf16, minus one unless the kept part is odd: ties go to even; a carry
     * into the exponent is the correct result (up to inf) */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline uint16_t fa_f16_from_f32(float f)
{
    uint32_t u = fa_half_float_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN: quiet */
    /* 65520 lies halfway between the largest f16, 65504 (odd mantissa), and 2^16: it and all above
     * round to inf */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* at least 2^-14: a normal f16. Round at bit 13, then rebias 127 -> 15 */
        a += 0xfffu + ((a >> 13) & 1u);
        return (uint16_t)(sign | ((a - (112u << 23)) >> 13));
    }
    /* below 2^-14: a multiple of 2^-24 (a subnormal, or 2^-14 itself). Adding 0.5 rounds |f| to
     * that grid (float's ulp at 0.5 is 2^-24), ties to even; the low bits are the f16's */
    float rounded = fa_half_bits_float(a) + 0.5f;
    return (uint16_t)(sign | (fa_half_float_bits(rounded) - 0x3f000000u));
}

#endif
