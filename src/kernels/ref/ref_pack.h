/* SPDX-License-Identifier: BSD-3-Clause */
/* Packing a query block transposed (see kernels/kernels.h). Portable C: the ref table's
 * pack_transposed, and the loop every table's pack must match byte for byte (tests/test_pack.c); the
 * drivers call their table's. */
#ifndef FA_REF_PACK_H
#define FA_REF_PACK_H

#include <stdint.h>

/* dst[x][r] = mult · src[r][x] for x < dim, r < rows; zero for rows in [rows, ld). */
void fa_pack_transposed_f32(int64_t rows, int64_t dim, const float *src, int64_t src_stride, float mult,
                            float *dst, int64_t ld);
void fa_pack_transposed_f64(int64_t rows, int64_t dim, const double *src, int64_t src_stride, double mult,
                            double *dst, int64_t ld);

#endif
