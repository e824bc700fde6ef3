/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX2 transposed pack (kernels.h, pack_transposed), compiled with -mavx2 in its own file;
 * for the table's halves (pack_transposed) and for tests/test_pack.c, which calls it directly. */
#ifndef FA_KERNELS_AVX2_PACK_H
#define FA_KERNELS_AVX2_PACK_H

#include <stdint.h>

void fa_avx2_pack_transposed_f32(int64_t rows, int64_t dim, const float *src, int64_t src_stride, float mult,
                                 float *dst, int64_t ld);
void fa_avx2_pack_transposed_f64(int64_t rows, int64_t dim, const double *src, int64_t src_stride,
                                 double mult, double *dst, int64_t ld);

#endif
