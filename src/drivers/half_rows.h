/* SPDX-License-Identifier: BSD-3-Clause */
/* The drivers' side of half-precision views (FA_BF16, FA_F16): results are computed in the
 * accumulation type and rounded to the view's type once, as they are stored (kernels/half.h:
 * round to nearest even, overflow to inf, NaN stays NaN). Inputs reach the kernels widened by the
 * table's widen operation, tile by tile, into the arena. */
#ifndef FA_HALF_ROWS_H
#define FA_HALF_ROWS_H

#include <stdint.h>

#include "kernels/half.h"
#include "plan/problem.h"

/* Element y of a row of half type t, widened (exactly) to float. */
static inline float fa_half_load(fa_dtype t, const void *row, int64_t y)
{
    uint16_t h = ((const uint16_t *)row)[y];
    return t == FA_BF16 ? fa_bf16_to_f32(h) : fa_f16_to_f32(h);
}

/* Element y of a row of half type t = v, rounded once. */
static inline void fa_half_store(fa_dtype t, void *row, int64_t y, float v)
{
    ((uint16_t *)row)[y] = t == FA_BF16 ? fa_bf16_from_f32(v) : fa_f16_from_f32(v);
}

#endif
