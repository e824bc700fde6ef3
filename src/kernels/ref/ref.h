/* SPDX-License-Identifier: BSD-3-Clause */
/* What ref_kernels.c shares with ref_pairs.c, and ref_pairs.c with the neon_bf16 table. */
#ifndef FA_KERNELS_REF_H
#define FA_KERNELS_REF_H

#include <stdint.h>

/* online_softmax of ref's float set over raw scores (scores = scale·s) and a transposed accumulator
 * acc[y·ld + r], y < acc_dim. */
void fa_ref_online_softmax_t_f32(int64_t rows, int64_t ld, int64_t cols, float scale, float *s,
                                 float *row_max, float *row_sum, float *acc, int64_t acc_dim);

/* The padding unit along k of ref's packed bf16 operands: one 64-byte row of bf16, as AMX reads them. */
#define FA_REF_BF16_PAD_K 32

/* pack_pairs, pack_rows_t and pack_rows_pairs of fa_kernels_ref_bf16 (kernels.h), padded to
 * FA_REF_BF16_PAD_K: moving bf16 patterns is the same on every CPU, so a table whose packs are not
 * (yet) its own points at these. */
void fa_ref_bf16_pack_pairs(int64_t rows, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                            int64_t ld);
int fa_ref_bf16_pack_rows_t(int64_t cols, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                            int64_t ld);
int fa_ref_bf16_pack_rows_pairs(int64_t rows, int64_t rows_pad, int64_t dim, const uint16_t *src,
                                int64_t src_stride, uint16_t *dst, int64_t ldd);

#endif
