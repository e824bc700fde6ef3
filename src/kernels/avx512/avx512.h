/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX-512 table's two halves, compiled with AVX-512 enabled in their own files. */
#ifndef FA_KERNELS_AVX512_H
#define FA_KERNELS_AVX512_H

#include "kernels/simd/entry_points.h"

FA_SIMD_TABLE_DECLARATIONS(avx512)

/* The float half's dropout operations (avx512_dropout.c). */
void fa_avx512_dropout_probs_f32(const fa_dropout_stream *st, int64_t i0, int64_t rows, int64_t j0,
                                 int64_t cols, float kept, float *s, int64_t ld);
void fa_avx512_dropout_score_grad_f32(const fa_dropout_stream *st, int64_t i0, int64_t rows, int64_t j0,
                                      int64_t cols, float kept, float *pt, float *ds, const float *delta,
                                      int64_t ld);

#endif
