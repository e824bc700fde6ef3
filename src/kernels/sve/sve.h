/* SPDX-License-Identifier: BSD-3-Clause */
/* The sve table's halves, one pair per vector length compiled (sve_tiles.h says why), and their
 * transposed packs (simd/pack.h). */
#ifndef FA_KERNELS_SVE_H
#define FA_KERNELS_SVE_H

#include "kernels/simd/entry_points.h"

#define FA_SVE_DECLARATIONS(isa)                                                                          \
    FA_SIMD_TABLE_DECLARATIONS(isa)                                                                       \
    void fa_##isa##_pack_transposed_f32(int64_t rows, int64_t dim, const float *src, int64_t src_stride,  \
                                        float mult, float *dst, int64_t ld);                              \
    void fa_##isa##_pack_transposed_f64(int64_t rows, int64_t dim, const double *src, int64_t src_stride, \
                                        double mult, double *dst, int64_t ld);
FA_SVE_DECLARATIONS(sve128)
FA_SVE_DECLARATIONS(sve256)
FA_SVE_DECLARATIONS(sve512)

#endif
