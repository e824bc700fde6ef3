/* SPDX-License-Identifier: BSD-3-Clause */
/* SVE kernels for float at FA_SVE_BITS (defined by the including sve_f32_<bits>.c): what differs from
 * the other element type, then the template (sve_tiles.h). */
#include <arm_sve.h>
#include <math.h>
#include <stdint.h>

#include "kernels/exp2_poly.h"
#include "kernels/neon/neon.h"
#include "kernels/sve/sve.h"

typedef svfloat32_t vec __attribute__((arm_sve_vector_bits(FA_SVE_BITS)));
typedef svbool_t vmask __attribute__((arm_sve_vector_bits(FA_SVE_BITS)));
#define FA_T                     float
#define FA_SFX                   f32
#define FA_BITS_OF_T             32
#define FA_LANES                 (FA_SVE_BITS / 32)
#define FA_PTRUE                 svptrue_b32()
#define FA_WHILELT(n)            svwhilelt_b32_s64(0, (int64_t)(n))
#define FA_WIDEN_OP              fa_neon_widen_f32 /* simd/table.h: neon's (neon/neon_widen.c) */
#define FA_EXP2_COEF             fa_exp2_floor_coef_f32
#define V_ROUND_SPLIT(keep, x)   ((vec)svrintm_z((keep), (x)))
#define V_POW2_SCALE(keep, p, n) ((vec)svscale_z((keep), (p), svcvt_s32_z((keep), (n))))

/* Lanes [0, n) of a vector widened from bf16 (shifted into the upper half of each lane) or f16
 * (FCVT of the low half of each lane: exact, subnormals included), the rest 0
 * (kernels/simd/half_operands.h): a predicated halfword load, so nothing past p + n is read. */
static inline __attribute__((always_inline)) vec sve_load_half(const uint16_t *p, int64_t n, int bf16)
{
    const svuint32_t h = svld1uh_u32(FA_WHILELT(n), p);
    return bf16 ? svreinterpret_f32(svlsl_n_u32_x(FA_PTRUE, h, 16))
                : svcvt_f32_f16_x(FA_PTRUE, svreinterpret_f16(h));
}
#define V_LOAD_HALF(p, n, bf16) sve_load_half((p), (n), (bf16))
#define FA_HALF_VECS            4 /* 4 rows x 4 vectors + 4 x vectors + a broadcast, of 32 registers */
#define FA_HALF_VECS_FEW        8 /* for 1 or 2 rows: 2 x 8 + 8 + 1 */

/* softcap: the vector tanh of kernels/score_mods.h */
#define FA_TANH_VECTOR 1

#include "kernels/sve/sve_tiles.h"
