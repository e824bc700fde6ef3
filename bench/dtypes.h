/* SPDX-License-Identifier: BSD-3-Clause */
/* The element types of a case as fa-bench names and pairs them; their sizes, loads, stores and
 * quantization are the test kit's (tests/kit/dtype.h, included here). flashattn.h pairs them in two
 * groups: q, out, dout and dq have shape.dtype; k, v, dk and dv have shape.kv_dtype, which equals
 * dtype or, with an f32 dtype, is bf16 or f16 (a half-precision KV cache) or i8, f8e4m3 or f8e5m2 (a
 * quantized KV cache, forward only, with per-row scales). lse, a bias and the
 * arithmetic have the accumulation type: f64 for f64, f32 for everything else. */
#ifndef FA_BENCH_DTYPES_H
#define FA_BENCH_DTYPES_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "flashattn.h"
#include "options.h"

/* Bytes one row of n elements of a KV cache of type t takes: n elements, plus a quantized row's f32
 * scale. */
double bench_kv_row_bytes(fa_dtype t, int64_t n);

/* Whether fa_forward accepts q of type q with k of type k (flashattn.h): equal types (not quantized),
 * or f32 queries over a bf16, f16, i8, f8e4m3 or f8e5m2 KV cache (fa_backward: not the quantized). */
int bench_dtype_pair_ok(fa_dtype q, fa_dtype k);

/* The case's types in words: "bf16" when both groups share one, else "f32, k/v bf16" (a quantized
 * cache: "f32, k/v i8 + row scales"). */
void bench_dtypes_words(const bench_shape *s, char *out, size_t size);

#endif
