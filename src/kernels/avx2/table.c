/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX2+FMA table. Only its two halves are compiled with AVX2 and FMA enabled; this file is
 * plain, so nothing here runs an AVX2 instruction before the CPU check in select.c. */
#include "kernels/avx2/avx2.h"

const fa_kernels fa_kernels_avx2 = {.name = "avx2",
                                    .requires = FA_CPU_AVX2 | FA_CPU_FMA | FA_CPU_F16C,
                                    .f32 = &fa_avx2_kernels_f32,
                                    .f64 = &fa_avx2_kernels_f64};
