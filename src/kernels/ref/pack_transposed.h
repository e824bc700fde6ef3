/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_pack_transposed_<FA_SFX>, written once for both element types: included by pack.c with FA_T and
 * FA_SFX (f32/f64) defined. */

#include "template.h"

void FA_NAME(fa_pack_transposed_)(int64_t rows, int64_t dim, const FA_T *src, int64_t src_stride, FA_T mult,
                                  FA_T *dst, int64_t ld)
{
    for (int64_t r0 = 0; r0 < rows; r0 += PACK_BLOCK) {
        int64_t r1 = rows - r0 < PACK_BLOCK ? rows : r0 + PACK_BLOCK;
        for (int64_t x0 = 0; x0 < dim; x0 += PACK_BLOCK) {
            int64_t x1 = dim - x0 < PACK_BLOCK ? dim : x0 + PACK_BLOCK;
            for (int64_t x = x0; x < x1; x++)
                for (int64_t r = r0; r < r1; r++) dst[x * ld + r] = mult * src[r * src_stride + x];
        }
    }
    for (int64_t x = 0; x < dim; x++)
        for (int64_t r = rows; r < ld; r++) dst[x * ld + r] = 0;
}
