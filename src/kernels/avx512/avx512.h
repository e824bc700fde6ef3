/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX-512 table's two halves, compiled with AVX-512 enabled in their own files. */
#ifndef FA_KERNELS_AVX512_H
#define FA_KERNELS_AVX512_H

#include "kernels/simd/entry_points.h"

FA_SIMD_TABLE_DECLARATIONS(avx512)

#endif
