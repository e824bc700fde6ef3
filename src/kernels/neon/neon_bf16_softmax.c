/* SPDX-License-Identifier: BSD-3-Clause */
/* The neon_bf16 set's online softmax (fa_kernels_bf16.online_softmax_pairs): the neon table's, over
 * its own vocabulary (neon_vocab.h, float), with the transposed accumulator and P written in pairs
 * of keys (simd/softmax_body.h), rounded by BFCVTN and interleaved by ST2 (neon_bf16_round.h; p is
 * never subnormal: exp2 flushes). The same body as kernels/amx/amx_softmax.c's. */
#include <arm_neon.h>
#include <math.h>
#include <stdint.h>

#include "kernels/exp2_poly.h"
#include "kernels/neon/neon_bf16.h"
#include "kernels/neon/neon_bf16_round.h"
#include "kernels/ref/ref.h"

typedef float32x4_t vec;
typedef uint32x4_t vmask;
#define FA_T     float
#define FA_SFX   f32
#define FA_U     u32
#define FA_UINT  uint32_t
#define FA_LANES 4

static const uint32_t lane_weights_f32[4] = {1, 2, 4, 8};
static const uint32_t lane_index_f32[4] = {0, 1, 2, 3};
#define V_MASK_NOT(m) vmvnq_u32(m)
#define V_POW2_OF_INTEGER(n) \
    vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23))
#define FA_EXP2_COEF  fa_exp2_floor_coef_f32
#define FA_EXP2_FLOOR 1
#include "kernels/neon/neon_vocab.h"

#define FA_MAX_CHAINS               2 /* as the neon table's (neon_tiles.h says why) */
#define FA_PAIRS_PAD                FA_REF_BF16_PAD_K
#define FA_PAIRS_STORE(dst, p0, p1) fa_neon_bf16_pairs_store((dst), (p0), (p1))
#include "kernels/simd/softmax_body.h"

void fa_neon_bf16_online_softmax_pairs(int64_t rows, int64_t ld, int64_t cols, float scale, float *s,
                                       float *row_max, float *row_sum, float *acc, int64_t acc_dim,
                                       uint16_t *pp)
{
    online_softmax_body_f32(1, 1, scale, rows, ld, cols, s, row_max, row_sum, acc, ld, acc_dim, pp);
}
