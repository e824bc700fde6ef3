/* SPDX-License-Identifier: BSD-3-Clause */
/* The element types of a case and how fa-bench reads and writes them. flashattn.h pairs them in two
 * groups: q, out, dout and dq have shape.dtype; k, v, dk and dv have shape.kv_dtype, which equals
 * dtype or, with an f32 dtype, is bf16 or f16 (a half-precision KV cache) or i8, f8e4m3 or f8e5m2 (a
 * quantized KV cache, forward only, with per-row scales: kv_quant.h). lse, a bias and the
 * arithmetic have the accumulation type: f64 for f64, f32 for everything else. */
#ifndef FA_BENCH_DTYPES_H
#define FA_BENCH_DTYPES_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "options.h"

/* Bytes of one element: 8, 4, 2, 2; 1 for the quantized types. */
size_t bench_dtype_size(fa_dtype t);

/* 1 for FA_BF16 and FA_F16. */
int bench_dtype_is_half(fa_dtype t);

/* 1 for FA_I8, FA_F8_E4M3 and FA_F8_E5M2. */
int bench_dtype_is_quantized(fa_dtype t);

/* Bytes one row of n elements of a KV cache of type t takes: n elements, plus a quantized row's f32
 * scale. */
double bench_kv_row_bytes(fa_dtype t, int64_t n);

/* The type a call with q of type q accumulates in, and lse's and a bias's: FA_F64 or FA_F32. */
fa_dtype bench_accum_dtype(fa_dtype q);

/* Unit roundoff u of the type (2^-53, 2^-24, 2^-8, 2^-11): rounding to nearest changes x by at most
 * u*|x| (bf16 keeps 8 significant bits, f16 11, outside f16's subnormal range). The quantized types
 * give f32's: only outputs are rounded by this, and they are never quantized. */
double bench_dtype_unit_roundoff(fa_dtype t);

/* Whether fa_forward accepts q of type q with k of type k (flashattn.h): equal types (not quantized),
 * or f32 queries over a bf16, f16, i8, f8e4m3 or f8e5m2 KV cache (fa_backward: not the quantized). */
int bench_dtype_pair_ok(fa_dtype q, fa_dtype k);

/* Element index of data (of type t) as a double; half types widen exactly, a quantized element is
 * its code's value without the row's scale. */
double bench_load(fa_dtype t, const void *data, int64_t index);

/* x into element index of data: f64 as is; f32 rounded once; bf16 and f16 rounded to f32 first, then
 * to the half type (round to nearest even, src/kernels/half.h), so a half run's inputs are an f32
 * run's inputs of the same seed, rounded, as torch's f32_tensor.to(torch.bfloat16) gives them. A
 * quantized type takes x in code units (bench_kv_encode): its rows are made by
 * bench_kv_quantize_row, with their scales. */
void bench_store(fa_dtype t, void *data, int64_t index, double x);

/* Element (b, h, s, d) of a tensor of any type, read through its strides (as bench_load). */
double bench_tensor_load(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d);

/* The case's types in words: "bf16" when both groups share one, else "f32, k/v bf16" (a quantized
 * cache: "f32, k/v i8 + row scales"). */
void bench_dtypes_words(const bench_shape *s, char *out, size_t size);

#endif
