/* SPDX-License-Identifier: BSD-3-Clause */
/* NEON kernels for float: what differs from the other element type, then the template
 * (neon_tiles.h). */
#include <arm_neon.h>
#include <math.h>
#include <stdint.h>

#include "kernels/exp2_poly.h"
#include "kernels/neon/neon.h"

typedef float32x4_t vec;
typedef uint32x4_t vmask;
#define FA_T        float
#define FA_SFX      f32
#define FA_U        u32
#define FA_UINT     uint32_t
#define FA_LANES    4
#define FA_WIDEN_OP fa_neon_widen_f32 /* simd/table.h */

static const uint32_t lane_weights_f32[4] = {1, 2, 4, 8};
static const uint32_t lane_index_f32[4] = {0, 1, 2, 3};
#define V_MASK_NOT(m) vmvnq_u32(m)
/* 2^n from an integral n in [-126, 128] (NaN converts to 0): n + 127 in the exponent field */
#define V_POW2_OF_INTEGER(n) \
    vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23))

#define FA_EXP2_COEF  fa_exp2_floor_coef_f32
#define FA_EXP2_FLOOR 1

/* Lanes [0, n) of a vector of stored elements (bf16, f16, int8, FP8) converted exactly, the rest 0,
 * nothing past element n - 1 read (neon_stored.h; kernels/simd/half_operands.h). */
#include "kernels/neon/neon_stored.h"
#define V_LOAD_STORED(p, n, t) neon_load_stored((p), (n), (t))
#define FA_HALF_VECS           4 /* 4 rows x 4 vectors + 4 x vectors + a broadcast, of 32 registers */
#define FA_HALF_VECS_FEW       8 /* for 1 or 2 rows: 2 x 8 + 8 + 1 */

/* softcap: the vector tanh of kernels/score_mods.h */
#define FA_TANH_VECTOR 1

#include "neon_tiles.h"
