/* SPDX-License-Identifier: BSD-3-Clause */
/* The sve table's f32 half at 1024-bit registers: 512-bit vectors in them (sve_vocab.h), compiled
 * with -msve-vector-bits=1024 (sve_tiles.h). */
#define FA_SVE_BITS 1024
#include "kernels/sve/sve_f32.h"
#include "kernels/sve/sve_tiles.h"
