/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX-512 table (F, DQ: its f32 exp2 splits with vreduceps, and BW: the decode step widens bf16
 * rows with vpermw). Only its two halves are compiled with AVX-512 enabled; this file is plain,
 * so nothing here runs an AVX-512 instruction before the CPU check in select.c. */
#include "kernels/avx512/avx512.h"

const fa_kernels fa_kernels_avx512 = {.name = "avx512",
                                      .requires = FA_CPU_AVX512F | FA_CPU_AVX512DQ | FA_CPU_AVX512BW,
                                      .f32 = &fa_avx512_kernels_f32,
                                      .f64 = &fa_avx512_kernels_f64};
