/* SPDX-License-Identifier: BSD-3-Clause */
/* The NEON (Advanced SIMD) table's two halves, and its widening of stored rows (neon_widen.c), which
 * the sve table shares. */
#ifndef FA_KERNELS_NEON_H
#define FA_KERNELS_NEON_H

#include "kernels/simd/entry_points.h"

FA_SIMD_TABLE_DECLARATIONS(neon)
void fa_neon_pack_transposed_f32(int64_t rows, int64_t dim, const float *src, int64_t src_stride, float mult,
                                 float *dst, int64_t ld);
void fa_neon_pack_transposed_f64(int64_t rows, int64_t dim, const double *src, int64_t src_stride,
                                 double mult, double *dst, int64_t ld);

#endif
