/* SPDX-License-Identifier: BSD-3-Clause */
/* SVE kernels for float at FA_SVE_BITS (defined by the including sve_f32_<bits>.c): what differs from
 * the other element type, then the vocabulary (sve_vocab.h); the including file then has the kernels
 * (sve_tiles.h, or the sve_bf16 set's, sve_bf16.h). */
#include <arm_sve.h>
#include <math.h>
#include <stdint.h>

#include "kernels/exp2_poly.h"
#include "kernels/neon/neon.h"
#include "kernels/sve/sve.h"

typedef svfloat32_t vec __attribute__((arm_sve_vector_bits(FA_SVE_BITS)));
typedef svbool_t vmask __attribute__((arm_sve_vector_bits(FA_SVE_BITS)));
#define FA_T         float
#define FA_SFX       f32
#define FA_BITS_OF_T 32
#define FA_LANES     ((FA_SVE_BITS > 512 ? 512 : FA_SVE_BITS) / 32) /* 512 bits at most: sve_vocab.h */
#define FA_PTRUE     (FA_SVE_BITS > 512 ? svptrue_pat_b32(SV_VL16) : svptrue_b32())
/* at 1024 and 2048 bits never past the vector's lanes (sve_vocab.h) */
#define FA_WHILELT(n) \
    svwhilelt_b32_s64(0, FA_SVE_BITS > 512 && (int64_t)(n) > FA_LANES ? FA_LANES : (int64_t)(n))
#define FA_WIDEN_OP              fa_neon_widen_f32 /* simd/table.h: neon's (neon/neon_widen.c) */
#define FA_EXP2_COEF             fa_exp2_floor_coef_f32
#define V_ROUND_SPLIT(keep, x)   ((vec)svrintm_z((keep), (x)))
#define V_POW2_SCALE(keep, p, n) ((vec)svscale_z((keep), (p), svcvt_s32_z((keep), (n))))

/* Lanes [0, n) of a vector of stored elements (bf16, f16, int8, FP8) converted exactly, the rest 0
 * (kernels/simd/half_operands.h): a predicated load of each element into its 32-bit lane (halfwords
 * or bytes, zero- or, for int8, sign-extended), so nothing past element n - 1 is read, then the
 * conversions of neon/neon_stored.h, which says why each is exact and matches kernels/half.h and
 * kernels/quant.h: bf16 shifted up; f16 by FCVT of each lane's low half; int8 by SCVTF; E5M2 as the
 * top byte of an f16; E4M3's magnitude as an f16 times 256, its NaN code the quiet NaN with its
 * sign. */
static inline __attribute__((always_inline)) vec sve_load_stored(const void *p, int64_t n, fa_dtype t)
{
    const svbool_t pg = FA_WHILELT(n), pt = FA_PTRUE;
    if (t == FA_BF16) return svreinterpret_f32(svlsl_n_u32_x(pt, svld1uh_u32(pg, (const uint16_t *)p), 16));
    if (t == FA_F16) return svcvt_f32_f16_x(pt, svreinterpret_f16(svld1uh_u32(pg, (const uint16_t *)p)));
    if (t == FA_I8) return svcvt_f32_s32_x(pt, svld1sb_s32(pg, (const int8_t *)p));
    const svuint32_t b = svld1ub_u32(pg, (const uint8_t *)p);
    if (t == FA_F8_E5M2) return svcvt_f32_f16_x(pt, svreinterpret_f16(svlsl_n_u32_x(pt, b, 8)));
    const svuint32_t mag = svand_n_u32_x(pt, b, 0x7f), top = svand_n_u32_x(pt, b, 0x80);
    const svuint32_t h = svorr_u32_x(pt, svlsl_n_u32_x(pt, mag, 7), svlsl_n_u32_x(pt, top, 8));
    const svfloat32_t f = svmul_n_f32_x(pt, svcvt_f32_f16_x(pt, svreinterpret_f16(h)), 256.0f);
    const svuint32_t quiet = svorr_n_u32_x(pt, svlsl_n_u32_x(pt, top, 24), 0x7fc00000u);
    return svsel_f32(svcmpeq_n_u32(pt, mag, 0x7f), svreinterpret_f32(quiet), f);
}
#define V_LOAD_STORED(p, n, t) sve_load_stored((p), (n), (t))
#define FA_HALF_VECS           4 /* 4 rows x 4 vectors + 4 x vectors + a broadcast, of 32 registers */
#define FA_HALF_VECS_FEW       8 /* for 1 or 2 rows: 2 x 8 + 8 + 1 */

/* softcap: the vector tanh of kernels/score_mods.h */
#define FA_TANH_VECTOR 1

#include "kernels/sve/sve_vocab.h"
