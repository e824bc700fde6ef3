/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX-512F table's two halves, compiled with -mavx512f in their own files. */
#ifndef FA_KERNELS_AVX512_H
#define FA_KERNELS_AVX512_H

#include <stdint.h>

#include "kernels/kernels.h"

extern const fa_kernels_f32 fa_avx512_kernels_f32;
extern const fa_kernels_f64 fa_avx512_kernels_f64;

/* exp2 exactly as the kernels compute it, over n values (n a multiple of 16 resp. 8): for tests. */
void fa_avx512_exp2_f32(const float *x, float *y, int64_t n);
void fa_avx512_exp2_f64(const double *x, double *y, int64_t n);

/* The softcap's tanh exactly as the f32 kernels compute it (n a multiple of 16): for tests.
 * Accuracy and edge cases are documented in kernels/score_mods.h. */
void fa_avx512_tanh_f32(const float *x, float *y, int64_t n);

#endif
