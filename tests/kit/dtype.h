/* SPDX-License-Identifier: BSD-3-Clause */
/* The element types of include/flashattn.h as the tests and the benchmarks read and write them:
 * sizes, bf16 and binary16 narrowing and widening, int8 and OCP FP8 (E4M3, E5M2) codes with their
 * per-row scales. Written from the formats' definitions (IEEE 754 binary16; bfloat16 as the top
 * half of binary32; "OCP 8-bit Floating Point Specification (OFP8)" rev. 1.0), not from the
 * library's conversions: an oracle must not share code with what it checks.
 *
 * Narrowing rounds to nearest, ties to even, once, with an unbounded exponent first: a result
 * above the type's largest finite value becomes ±inf (bf16, f16); values below the smallest normal
 * become subnormals or ±0; a NaN stays a quiet NaN with its sign and the top bits of its payload.
 * Widening is exact. A quantized element's value is scale · code, one float multiplication. */
#ifndef FA_KIT_DTYPE_H
#define FA_KIT_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"

/* Bytes of one element: 8, 4, 2 (bf16, f16), 1 (i8, f8e4m3, f8e5m2). */
size_t kit_dtype_size(fa_dtype t);
/* 1 for FA_BF16 and FA_F16. */
int kit_dtype_is_half(fa_dtype t);
/* 1 for FA_I8, FA_F8_E4M3 and FA_F8_E5M2. */
int kit_dtype_is_quantized(fa_dtype t);
/* The type a call with q of type q accumulates in, and lse's and a bias's: FA_F64 or FA_F32. */
fa_dtype kit_accum_dtype(fa_dtype q);
/* Unit roundoff u (2^-53, 2^-24, 2^-8, 2^-11; f32's for the quantized types, whose outputs are
 * never quantized): rounding to nearest moves x by at most u·|x| in the normal range. */
double kit_unit_roundoff(fa_dtype t);

/* A float's bits and back (the storage, as memcpy reads it). */
uint32_t kit_float_bits(float f);
float kit_bits_float(uint32_t u);

float kit_bf16_to_f32(uint16_t h);
uint16_t kit_bf16_from_f32(float f);
float kit_f16_to_f32(uint16_t h);
uint16_t kit_f16_from_f32(float f);

/* The value of an int8 or FP8 code, without its row's scale (exact in float). */
float kit_code_to_f32(fa_dtype t, uint8_t code);
/* The largest finite code of a quantized type, as a value: 127, 448 (E4M3), 57344 (E5M2). */
double kit_quant_code_max(fa_dtype t);
/* x (in code units, already divided by the scale) as a code of type t: rounded to nearest, ties to
 * even, saturated to ±kit_quant_code_max; a NaN becomes the FP8 NaN code 0x7f (int8: 0). */
uint8_t kit_quant_encode(fa_dtype t, double x);
/* Quantizes row x[0..n) into codes[0..n) and returns its scale: max|x| / kit_quant_code_max(t)
 * rounded to float (1 for a row of zeros). */
float kit_quantize_row(fa_dtype t, const float *x, int64_t n, uint8_t *codes);
/* Element x of a quantized row with that scale as the library reads it: scale · code, in float. */
float kit_quant_value(fa_dtype t, const void *codes, int64_t x, float scale);

/* x rounded to t: exact for f64; f32 by the cast; bf16 and f16 through float, then narrowed and
 * widened back (so a float x is rounded once). */
double kit_round(fa_dtype t, double x);

/* Element `index` of data (of type t) as a double; a half type widens exactly, a quantized element
 * is its code's value without the row's scale. */
double kit_load(fa_dtype t, const void *data, int64_t index);
/* x into element `index` of data: f64 as is; f32 rounded once; bf16 and f16 rounded to f32 first,
 * then to the half type (as torch's f32_tensor.to(torch.bfloat16) does); a quantized type takes x
 * in code units (kit_quant_encode). */
void kit_store(fa_dtype t, void *data, int64_t index, double x);
/* Element (b, h, s, d) of a tensor of any type, read through its strides (as kit_load). */
double kit_tensor_load(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d);
/* x into element (b, h, s, d) of a tensor of any type, through its strides (as kit_store). */
void kit_tensor_store(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d, double x);

#endif
