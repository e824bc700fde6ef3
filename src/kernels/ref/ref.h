/* SPDX-License-Identifier: BSD-3-Clause */
/* What ref_kernels.c shares with ref_pairs.c. */
#ifndef FA_KERNELS_REF_H
#define FA_KERNELS_REF_H

#include <stdint.h>

/* online_softmax of ref's float set over raw scores (scores = scale·s) and a transposed accumulator
 * acc[y·ld + r], y < acc_dim. */
void fa_ref_online_softmax_t_f32(int64_t rows, int64_t ld, int64_t cols, float scale, float *s, float *row_max,
                                 float *row_sum, float *acc, int64_t acc_dim);

#endif
