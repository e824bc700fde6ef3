/* SPDX-License-Identifier: BSD-3-Clause */
/* The sve table's f32 half at 512-bit vectors (compiled with -msve-vector-bits=512: sve_tiles.h). */
#define FA_SVE_BITS 512
#include "kernels/sve/sve_f32.h"
#include "kernels/sve/sve_tiles.h"
