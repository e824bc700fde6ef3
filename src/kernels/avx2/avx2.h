/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX2+FMA table's two halves, compiled with -mavx2 -mfma in their own files. */
#ifndef FA_KERNELS_AVX2_H
#define FA_KERNELS_AVX2_H

#include <stdint.h>

#include "kernels/kernels.h"

extern const fa_kernels_f32 fa_avx2_kernels_f32;
extern const fa_kernels_f64 fa_avx2_kernels_f64;

/* exp2 exactly as the kernels compute it, over any n values (unaligned x and y, nothing read or
 * written past n): for tests. Accuracy and edge cases are documented in avx2_tiles.h. */
void fa_avx2_exp2_f32(const float *x, float *y, int64_t n);
void fa_avx2_exp2_f64(const double *x, double *y, int64_t n);

/* The softcap's tanh exactly as the f32 kernels compute it (unaligned x and y, nothing
 * read or written past n): for tests. Accuracy and edge cases are documented in kernels/score_mods.h. */
void fa_avx2_tanh_f32(const float *x, float *y, int64_t n);

#endif
