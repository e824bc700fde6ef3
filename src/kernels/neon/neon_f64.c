/* SPDX-License-Identifier: BSD-3-Clause */
/* NEON kernels for double: what differs from the other element type, then the template
 * (neon_tiles.h). */
#include <arm_neon.h>
#include <math.h>
#include <stdint.h>

#include "kernels/exp2_poly.h"
#include "kernels/neon/neon.h"

typedef float64x2_t vec;
typedef uint64x2_t vmask;
#define FA_T        double
#define FA_SFX      f64
#define FA_U        u64
#define FA_UINT     uint64_t
#define FA_LANES    2
#define FA_WIDEN_OP NULL /* simd/table.h: no driver widens into double */

static const uint64_t lane_weights_f64[2] = {1, 2};
static const uint64_t lane_index_f64[2] = {0, 1};
#define V_MASK_NOT(m) vreinterpretq_u64_u32(vmvnq_u32(vreinterpretq_u32_u64(m)))
/* 2^n from an integral n in [-1022, 1024] (NaN converts to 0): n + 1023 in the exponent field */
#define V_POW2_OF_INTEGER(n) \
    vreinterpretq_f64_s64(vshlq_n_s64(vaddq_s64(vcvtq_s64_f64(n), vdupq_n_s64(1023)), 52))

#define FA_EXP2_COEF  fa_exp2_coef_f64
#define FA_EXP2_FLOOR 0

/* softcap: libm's tanh per lane (kernels/score_mods.h) */
#define FA_TANH_VECTOR 0

#include "neon_tiles.h"
