/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX2+FMA table's two halves, compiled with -mavx2 -mfma in their own files. */
#ifndef FA_KERNELS_AVX2_H
#define FA_KERNELS_AVX2_H

#include "kernels/simd/entry_points.h"

FA_SIMD_TABLE_DECLARATIONS(avx2)

#endif
