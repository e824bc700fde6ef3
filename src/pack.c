/* SPDX-License-Identifier: BSD-3-Clause */
/* Transposed packing of query blocks. */
#include "pack.h"

/* In square blocks of PACK_BLOCK rows × PACK_BLOCK columns, so that the block's source rows and
 * destination rows both stay in L1 while it is transposed (row by row, every store would land in a
 * different cache line, ld elements apart). */
#define PACK_BLOCK 16

#define FA_DEFINE_PACK(T, SFX)                                                                                 \
    void fa_pack_transposed_##SFX(int64_t rows, int64_t dim, const T *src, int64_t src_stride, T mult, T *dst, \
                                  int64_t ld)                                                                  \
    {                                                                                                          \
        for (int64_t r0 = 0; r0 < rows; r0 += PACK_BLOCK) {                                                    \
            int64_t r1 = rows - r0 < PACK_BLOCK ? rows : r0 + PACK_BLOCK;                                      \
            for (int64_t x0 = 0; x0 < dim; x0 += PACK_BLOCK) {                                                 \
                int64_t x1 = dim - x0 < PACK_BLOCK ? dim : x0 + PACK_BLOCK;                                    \
                for (int64_t x = x0; x < x1; x++)                                                              \
                    for (int64_t r = r0; r < r1; r++) dst[x * ld + r] = mult * src[r * src_stride + x];        \
            }                                                                                                  \
        }                                                                                                      \
        for (int64_t x = 0; x < dim; x++)                                                                      \
            for (int64_t r = rows; r < ld; r++) dst[x * ld + r] = 0;                                           \
    }

FA_DEFINE_PACK(float, f32)
FA_DEFINE_PACK(double, f64)
