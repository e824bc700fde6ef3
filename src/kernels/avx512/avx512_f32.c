/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX-512F kernels for float: what differs from the other element type,
 * then the template (avx512_tiles.h). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"
#include "kernels/exp2_poly.h"

typedef __m512 vec;
typedef __mmask16 mask;
#define FA_T float
#define FA_SFX f32
#define FA_PS ps
#define FA_LANES 16
#define FA_WIDEN_OP fa_avx512_widen_f32 /* simd/table.h */

#define FA_EXP2_COEF fa_exp2_floor_coef_f32
#define FA_EXP2_FLOOR 1

#include "kernels/avx512/avx512_transpose.h"
#define V_TRANSPOSE(v) avx512_transpose_f32(v)
/* softcap: the vector tanh of kernels/score_mods.h */
#define FA_TANH_VECTOR 1

#include "avx512_tiles.h"
