/* SPDX-License-Identifier: BSD-3-Clause */
/* The element types of a case and how fa-bench reads and writes them. flashattn.h pairs them in two
 * groups: q, out, dout and dq have shape.dtype; k, v, dk and dv have shape.kv_dtype, which equals
 * dtype or, with an f32 dtype, is bf16 or f16 (a half-precision KV cache). lse, a bias and the
 * arithmetic have the accumulation type: f64 for f64, f32 for everything else. */
#ifndef FA_BENCH_DTYPES_H
#define FA_BENCH_DTYPES_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "options.h"

/* Bytes of one element: 8, 4, 2, 2. */
size_t bench_dtype_size(fa_dtype t);

/* 1 for FA_BF16 and FA_F16. */
int bench_dtype_is_half(fa_dtype t);

/* The type a call with q of type q accumulates in, and lse's and a bias's: FA_F64 or FA_F32. */
fa_dtype bench_accum_dtype(fa_dtype q);

/* Unit roundoff u of the type (2^-53, 2^-24, 2^-8, 2^-11): rounding to nearest changes x by at most
 * u*|x| (bf16 keeps 8 significant bits, f16 11, outside f16's subnormal range). */
double bench_dtype_unit_roundoff(fa_dtype t);

/* Whether fa_forward and fa_backward accept q of type q with k of type k (flashattn.h, issue 13's
 * contract): equal types, or f32 queries over a bf16 or f16 KV cache. */
int bench_dtype_pair_ok(fa_dtype q, fa_dtype k);

/* Element index of data (of type t) as a double; half types widen exactly. */
double bench_load(fa_dtype t, const void *data, int64_t index);

/* x into element index of data: f64 as is; f32 rounded once; bf16 and f16 rounded to f32 first, then
 * to the half type (round to nearest even, src/kernels/half.h), so a half run's inputs are an f32
 * run's inputs of the same seed, rounded, as torch's f32_tensor.to(torch.bfloat16) gives them. */
void bench_store(fa_dtype t, void *data, int64_t index, double x);

/* Element (b, h, s, d) of a tensor of any of the four types, read through its strides. */
double bench_tensor_load(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d);

/* The case's types in words: "bf16" when both groups share one, else "f32, k/v bf16". */
void bench_dtypes_words(const bench_shape *s, char *out, size_t size);

#endif
