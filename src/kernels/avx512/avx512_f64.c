/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX-512F kernels for double: what differs from the other element type,
 * then the template (avx512_tiles.h). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"
#include "kernels/exp2_poly.h"

typedef __m512d vec;
typedef __mmask8 mask;
#define FA_T        double
#define FA_SFX      f64
#define FA_PS       pd
#define FA_LANES    8
#define FA_WIDEN_OP NULL /* simd/table.h */

#define FA_EXP2_COEF  fa_exp2_coef_f64
#define FA_EXP2_FLOOR 0

#include "kernels/avx512/avx512_transpose.h"
#define V_TRANSPOSE(v) avx512_transpose_f64(v)
/* softcap: libm's tanh per lane (kernels/score_mods.h) */
#define FA_TANH_VECTOR 0

#include "avx512_tiles.h"
