/* SPDX-License-Identifier: BSD-3-Clause */
/* What a SIMD table (avx2, avx512, neon, sve) exports besides its kernels, declared once for all: its two
 * halves (simd/table.h defines them) and, for the tests, its exp2 and tanh exactly as the kernels
 * compute them. Those take any n values, unaligned x and y, and touch nothing past n; exp2's
 * accuracy and edge cases are documented in simd/simd.h and the ISA's template, tanh's in
 * kernels/score_mods.h (float only: the double kernels call libm's tanh). */
#ifndef FA_KERNELS_SIMD_ENTRY_POINTS_H
#define FA_KERNELS_SIMD_ENTRY_POINTS_H

#include <stdint.h>

#include "kernels/kernels.h"

#define FA_SIMD_TABLE_DECLARATIONS(isa)                                                                      \
    extern const fa_kernels_f32 fa_##isa##_kernels_f32;                                                      \
    extern const fa_kernels_f64 fa_##isa##_kernels_f64;                                                      \
    void fa_##isa##_exp2_f32(const float *x, float *y, int64_t n);                                           \
    void fa_##isa##_exp2_f64(const double *x, double *y, int64_t n);                                         \
    void fa_##isa##_tanh_f32(const float *x, float *y, int64_t n);                                           \
    void fa_##isa##_widen_f32(int64_t rows, int64_t dim, const void *src, int64_t src_stride, fa_dtype from, \
                              const float *scale, int64_t scale_stride, float *dst, int64_t dst_stride);

#endif
