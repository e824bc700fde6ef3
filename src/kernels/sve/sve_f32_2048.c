/* SPDX-License-Identifier: BSD-3-Clause */
/* The sve table's f32 half at 2048-bit registers: 512-bit vectors in them (sve_vocab.h), compiled
 * with -msve-vector-bits=2048 (sve_tiles.h). */
#define FA_SVE_BITS 2048
#include "kernels/sve/sve_f32.h"
#include "kernels/sve/sve_tiles.h"
