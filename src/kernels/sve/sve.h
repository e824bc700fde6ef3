/* SPDX-License-Identifier: BSD-3-Clause */
/* The sve table's halves, one pair per vector length compiled (sve_tiles.h says why), their
 * transposed packs (simd/pack.h), and the sve_bf16 set's dot and softmax (sve_bf16.h) at each. */
#ifndef FA_KERNELS_SVE_H
#define FA_KERNELS_SVE_H

#include "kernels/simd/entry_points.h"

#define FA_SVE_DECLARATIONS(isa)                                                                             \
    FA_SIMD_TABLE_DECLARATIONS(isa)                                                                          \
    void fa_##isa##_pack_transposed_f32(int64_t rows, int64_t dim, const float *src, int64_t src_stride,     \
                                        float mult, float *dst, int64_t ld);                                 \
    void fa_##isa##_pack_transposed_f64(int64_t rows, int64_t dim, const double *src, int64_t src_stride,    \
                                        double mult, double *dst, int64_t ld);                               \
    void fa_##isa##_bf16_dot(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda,                \
                             const uint16_t *b, int64_t ldb, float *c, int64_t ldc, float alpha,             \
                             int accumulate);                                                                \
    void fa_##isa##_bf16_online_softmax_pairs(int64_t rows, int64_t ld, int64_t cols, float scale, float *s, \
                                              float *row_max, float *row_sum, float *acc, int64_t acc_dim,   \
                                              uint16_t *pp);
FA_SVE_DECLARATIONS(sve128)
FA_SVE_DECLARATIONS(sve256)
FA_SVE_DECLARATIONS(sve512)
FA_SVE_DECLARATIONS(sve1024)
FA_SVE_DECLARATIONS(sve2048)

#endif
