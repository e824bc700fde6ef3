/* SPDX-License-Identifier: BSD-3-Clause */
/* The sve table's f64 half at 128-bit vectors (compiled with -msve-vector-bits=128: sve_tiles.h). */
#define FA_SVE_BITS 128
#include "kernels/sve/sve_f64.h"
#include "kernels/sve/sve_tiles.h"
