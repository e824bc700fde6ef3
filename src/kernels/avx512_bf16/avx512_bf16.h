/* SPDX-License-Identifier: BSD-3-Clause */
/* The avx512_bf16 table's own operations: its bf16 set shares the amx table's packs and softmax
 * (they need AVX-512 BW and BF16 only) and multiplies with vdpbf16ps (dpbf16_dot.c). */
#ifndef FA_KERNELS_AVX512_BF16_H
#define FA_KERNELS_AVX512_BF16_H

#include <stdint.h>

#include "kernels/kernels.h"

void fa_avx512_bf16_dot(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda, const uint16_t *b,
                        int64_t ldb, float *c, int64_t ldc, float alpha, int accumulate);
void fa_avx512_bf16_release(void);

#endif
