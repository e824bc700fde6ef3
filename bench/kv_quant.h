/* SPDX-License-Identifier: BSD-3-Clause */
/* Quantized KV caches (flashattn.h: FA_I8, FA_F8_E4M3, FA_F8_E5M2 for k and v under f32 queries, with
 * fa_params.k_scale and v_scale): how fa-bench makes them from an f32 run's values. One f32 scale per
 * row of D elements, i.e. per token and kv head, as serving stacks keep them: the row's max |x| over
 * the type's largest code (127, 448, 57344), so that the row uses the format's whole range; each
 * element is x / scale rounded to nearest (int8: ties to even, clamped to ±127; FP8: round to
 * nearest even into the format, saturating to its largest finite value). The library reads element
 * x of the row as scale · code (src/kernels/quant.h), and the oracle reads the same products. */
#ifndef FA_BENCH_KV_QUANT_H
#define FA_BENCH_KV_QUANT_H

#include <stdint.h>

#include "flashattn.h"

/* The largest finite code of a quantized type, as a value: 127, 448 (E4M3), 57344 (E5M2). */
double bench_kv_code_max(fa_dtype t);

/* x (in code units, already divided by the scale) as a code of type t: rounded to nearest, ties to
 * even, saturated to ±bench_kv_code_max; a NaN becomes the FP8 NaN code 0x7f (int8: 0). */
uint8_t bench_kv_encode(fa_dtype t, double x);

/* Quantizes row x[0..n) into codes[0..n) and returns its scale: max|x| / bench_kv_code_max(t)
 * rounded to float (1 for a row of zeros). */
float bench_kv_quantize_row(fa_dtype t, const float *x, int64_t n, uint8_t *codes);

/* The value the library reads for code x of a row with that scale: scale · code, in float. */
float bench_kv_value(fa_dtype t, const void *codes, int64_t x, float scale);

#endif
