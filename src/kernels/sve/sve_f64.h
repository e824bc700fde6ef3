/* SPDX-License-Identifier: BSD-3-Clause */
/* SVE kernels for double at FA_SVE_BITS (defined by the including sve_f64_<bits>.c): what differs from
 * the other element type, then the vocabulary (sve_vocab.h); the including file then has the kernels
 * (sve_tiles.h). */
#include <arm_sve.h>
#include <math.h>
#include <stdint.h>

#include "kernels/exp2_poly.h"
#include "kernels/sve/sve.h"

typedef svfloat64_t vec __attribute__((arm_sve_vector_bits(FA_SVE_BITS)));
typedef svbool_t vmask __attribute__((arm_sve_vector_bits(FA_SVE_BITS)));
#define FA_T         double
#define FA_SFX       f64
#define FA_BITS_OF_T 64
#define FA_LANES     ((FA_SVE_BITS > 512 ? 512 : FA_SVE_BITS) / 64) /* 512 bits at most: sve_vocab.h */
#define FA_PTRUE     (FA_SVE_BITS > 512 ? svptrue_pat_b64(SV_VL8) : svptrue_b64())
/* at 1024 and 2048 bits never past the vector's lanes (sve_vocab.h) */
#define FA_WHILELT(n) \
    svwhilelt_b64_s64(0, FA_SVE_BITS > 512 && (int64_t)(n) > FA_LANES ? FA_LANES : (int64_t)(n))
#define FA_WIDEN_OP NULL /* simd/table.h: no driver widens into double */
/* nearest split with Taylor's 13 terms, as avx2 and avx512 (exp2_poly.h: the floor split would need a
 * longer polynomial on [0, 1)) */
#define FA_EXP2_COEF             fa_exp2_coef_f64
#define V_ROUND_SPLIT(keep, x)   ((vec)svrintn_z((keep), (x)))
#define V_POW2_SCALE(keep, p, n) ((vec)svscale_z((keep), (p), svcvt_s64_z((keep), (n))))

/* softcap: libm's tanh per lane (kernels/score_mods.h) */
#define FA_TANH_VECTOR 0

#include "kernels/sve/sve_vocab.h"
