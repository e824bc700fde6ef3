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
#define FA_T double
#define FA_SFX f64
#define FA_PS pd
#define FA_LANES 8

#define FA_EXP2_COEF fa_exp2_coef_f64
#define FA_EXP2_FLOOR 0

/* v[i] lane j -> v[j] lane i, 8 x 8: pairs of rows interleaved (unpack pd), then 128-bit lanes
 * gathered in two rounds of shuffle_f64x2: 24 shuffles, 3 a vector.
 * Unrolled and inlined, so that v stays in registers: gcc -O2 otherwise kept t, u and v in memory,
 * and a full bias (score_mods.h) took 3.45 ns per 16 scores instead of 2.2 (f32, Zen 4). */
static inline __attribute__((always_inline)) void avx512_transpose_f64(__m512d v[8])
{
    __m512d t[8], u[8];
    _Pragma("GCC unroll 16") for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_pd(v[i], v[i + 1]);     /* lane l: v[i][2l], v[i+1][2l] */
        t[i + 1] = _mm512_unpackhi_pd(v[i], v[i + 1]); /* lane l: v[i][2l+1], v[i+1][2l+1] */
    }
    /* u[h + j] (h = 0, 4): columns j and j + 4 of rows h..h + 3, as 128-bit lanes (rows h, h + 1 of
     * column j), (the same of column j + 4), (rows h + 2, h + 3 of column j), (the same of j + 4) */
    _Pragma("GCC unroll 16") for (int h = 0; h < 8; h += 4)
        _Pragma("GCC unroll 16") for (int k = 0; k < 2; k++) {
            u[h + k] = _mm512_shuffle_f64x2(t[h + k], t[h + 2 + k], 0x88);
            u[h + 2 + k] = _mm512_shuffle_f64x2(t[h + k], t[h + 2 + k], 0xdd);
        }
    _Pragma("GCC unroll 16") for (int k = 0; k < 4; k++) {
        v[k] = _mm512_shuffle_f64x2(u[k], u[4 + k], 0x88);
        v[4 + k] = _mm512_shuffle_f64x2(u[k], u[4 + k], 0xdd);
    }
}
#define V_TRANSPOSE(v) avx512_transpose_f64(v)
/* softcap: libm's tanh per lane (kernels/score_mods.h) */
#define FA_TANH_VECTOR 0

#include "avx512_tiles.h"
