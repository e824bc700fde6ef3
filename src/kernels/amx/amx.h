/* SPDX-License-Identifier: BSD-3-Clause */
/* The amx table's bf16 set (kernels.h, "bf16 on dot-product units"): the dot on AMX tiles
 * (amx_dot.c), the packs and the conversion of P on AVX-512 (amx_pack.c), and the avx512 table's
 * softmax writing P in pairs (amx_softmax.c). Each file is compiled for its own instructions;
 * table.c is plain. */
#ifndef FA_KERNELS_AMX_H
#define FA_KERNELS_AMX_H

#include <stdint.h>

#include "kernels/kernels.h"

/* The padding unit along k: a tile row is 64 bytes, 32 bf16. */
#define FA_AMX_PAD_K 32

void fa_amx_dot(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda, const uint16_t *b,
                int64_t ldb, float *c, int64_t ldc, float alpha, int accumulate);
void fa_amx_release(void);
void fa_amx_pack_pairs(int64_t rows, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                       int64_t ld);
int fa_amx_pack_rows_t(int64_t cols, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                       int64_t ld);
int fa_amx_pack_rows_pairs(int64_t rows, int64_t rows_pad, int64_t dim, const uint16_t *src,
                           int64_t src_stride, uint16_t *dst, int64_t ldd);
void fa_amx_rows_of(int64_t n, const float *src, uint16_t *dst);
void fa_amx_pairs_of(int64_t ld, int64_t cols, const float *p, uint16_t *pp);
void fa_amx_online_softmax_pairs(int64_t rows, int64_t ld, int64_t cols, float scale, float *s,
                                 float *row_max, float *row_sum, float *acc, int64_t acc_dim, uint16_t *pp);

extern const fa_kernels_bf16 fa_amx_kernels_bf16;

#endif
