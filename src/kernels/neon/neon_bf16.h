/* SPDX-License-Identifier: BSD-3-Clause */
/* The neon_bf16 table's bf16 set (kernels.h, "bf16 on dot-product units") on FEAT_BF16: the dot on
 * BFDOT (neon_bf16_dot.c), P and dS rounded by BFCVTN (neon_bf16_round.c), the neon table's softmax
 * writing P in pairs (neon_bf16_softmax.c), and ref's packs, which only move bf16 patterns. Each of
 * the three files is compiled for +bf16; table.c is plain. */
#ifndef FA_KERNELS_NEON_BF16_H
#define FA_KERNELS_NEON_BF16_H

#include <stdint.h>

#include "kernels/kernels.h"

/* A's pair (k, k + 1) of a row as one word, for a broadcast: the upper half zero for an odd K's last
 * k, so nothing past the row is read (the dots of neon_bf16_dot.c and sve/sve_bf16.h). */
static inline uint32_t fa_bf16_pair_word(const uint16_t *row, int64_t k, int64_t K)
{
    return row[k] | (k + 1 < K ? (uint32_t)row[k + 1] << 16 : 0u);
}

void fa_neon_bf16_dot(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda, const uint16_t *b,
                      int64_t ldb, float *c, int64_t ldc, float alpha, int accumulate);
void fa_neon_bf16_release(void);
void fa_neon_bf16_rows_of(int64_t n, const float *src, uint16_t *dst);
void fa_neon_bf16_pairs_of(int64_t ld, int64_t cols, const float *p, uint16_t *pp);
void fa_neon_bf16_online_softmax_pairs(int64_t rows, int64_t ld, int64_t cols, float scale, float *s,
                                       float *row_max, float *row_sum, float *acc, int64_t acc_dim,
                                       uint16_t *pp);

#endif
