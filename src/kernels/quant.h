/* SPDX-License-Identifier: BSD-3-Clause */
/* One-byte KV-cache elements, one at a time: signed int8 and OCP FP8 (E4M3 and E5M2, "OCP 8-bit
 * Floating Point Specification (OFP8)", rev. 1.0). The portable conversions that ref's widen, the
 * x86 tables' tails and the tests share. Every conversion to float is exact; the cache's value is
 * then scale · element, one float multiplication (kernels.h, widen).
 *
 * E4M3 (bias 7, 3 mantissa bits) has no infinities: S.1111.111 is NaN, S.1111.110 = ±448 is the
 * largest finite value, exponent 0 holds subnormals (m·2^-9). E5M2 (bias 15, 2 mantissa bits) is
 * binary16's top byte: S.11111.00 is ±inf, S.11111.{01,10,11} NaN, exponent 0 subnormals (m·2^-16).
 * A NaN becomes a quiet float NaN with its sign (E5M2 keeps its payload's top bits, as binary16
 * widening does). */
#ifndef FA_KERNELS_QUANT_H
#define FA_KERNELS_QUANT_H

#include <stdint.h>

#include "flashattn.h" /* fa_dtype */
#include "kernels/half.h"

static inline float fa_i8_to_f32(uint8_t x)
{
    return (float)(int8_t)x;
}

static inline float fa_f8e4m3_to_f32(uint8_t x)
{
    uint32_t sign = (uint32_t)(x & 0x80u) << 24, exponent = (x >> 3) & 0xfu, mantissa = x & 0x7u;
    if ((x & 0x7fu) == 0x7fu) return fa_half_bits_float(sign | 0x7fc00000u); /* the only NaN code */
    if (exponent != 0) return fa_half_bits_float(sign | ((exponent + 120u) << 23) | (mantissa << 20));
    /* zero or subnormal: mantissa·2^-9, exact in float */
    return fa_half_bits_float(sign | fa_half_float_bits((float)mantissa * 0x1p-9f));
}

static inline float fa_f8e5m2_to_f32(uint8_t x)
{
    return fa_f16_to_f32((uint16_t)((uint16_t)x << 8));
}

/* Element x of a row stored as t (a half or quantized type; kernels.h, widen), converted exactly. */
static inline float fa_stored_to_f32(fa_dtype t, const void *row, int64_t x)
{
    const uint8_t *b = (const uint8_t *)row;
    switch (t) {
    case FA_BF16: return fa_bf16_to_f32(((const uint16_t *)row)[x]);
    case FA_F16: return fa_f16_to_f32(((const uint16_t *)row)[x]);
    case FA_I8: return fa_i8_to_f32(b[x]);
    case FA_F8_E4M3: return fa_f8e4m3_to_f32(b[x]);
    default: return fa_f8e5m2_to_f32(b[x]);
    }
}

/* Bytes of one element of a stored type. */
static inline int64_t fa_stored_size(fa_dtype t)
{
    return t == FA_BF16 || t == FA_F16 ? 2 : 1;
}

/* The value of element x of stored row `row` whose scale is *scale (NULL: none, the half types):
 * scale · element, one float multiplication. What widen writes and the direct products read. */
static inline float fa_stored_value(fa_dtype t, const void *row, int64_t x, const float *scale)
{
    float e = fa_stored_to_f32(t, row, x);
    return scale ? *scale * e : e;
}

#endif
