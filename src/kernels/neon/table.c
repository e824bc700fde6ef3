/* SPDX-License-Identifier: BSD-3-Clause */
/* The NEON (Advanced SIMD) table: every aarch64 Linux CPU runs it. */
#include "kernels/neon/neon.h"

const fa_kernels fa_kernels_neon = {
    .name = "neon", .requires = FA_CPU_ASIMD, .f32 = &fa_neon_kernels_f32, .f64 = &fa_neon_kernels_f64};
