/* SPDX-License-Identifier: BSD-3-Clause */
/* Transposed packing of query blocks. */
#include "kernels/ref/ref_pack.h"

/* In square blocks of PACK_BLOCK rows × PACK_BLOCK columns, so that the block's source rows and
 * destination rows both stay in L1 while it is transposed (row by row, every store would land in a
 * different cache line, ld elements apart). */
#define PACK_BLOCK 16

#define FA_T   float
#define FA_SFX f32
#include "kernels/ref/pack_transposed.h"
#undef FA_T
#undef FA_SFX

#define FA_T   double
#define FA_SFX f64
#include "kernels/ref/pack_transposed.h"
#undef FA_T
#undef FA_SFX
