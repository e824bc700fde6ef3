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

#define FA_EXP2_COEF fa_exp2_floor_coef_f32
#define FA_EXP2_FLOOR 1

/* v[i] lane j -> v[j] lane i, 16 x 16: pairs of rows interleaved (unpack ps), then pairs of pairs
 * (unpack pd), then 128-bit lanes gathered in two rounds of shuffle_f32x4: 64 shuffles, 4 a vector.
 * Unrolled and inlined, so that v stays in registers: gcc -O2 otherwise kept t, u and v in memory,
 * and a full bias (score_mods.h) took 3.45 ns per 16 scores instead of 2.2 (f32, Zen 4). */
static inline __attribute__((always_inline)) void avx512_transpose_f32(__m512 v[16])
{
    __m512 t[16], u[16];
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
    }
    /* u[g + k] (g = 0, 4, 8, 12), 128-bit lane l: column 4l + k of rows g..g + 3 */
    _Pragma("GCC unroll 16") for (int g = 0; g < 16; g += 4) {
        __m512d a = _mm512_castps_pd(t[g]), b = _mm512_castps_pd(t[g + 2]), c = _mm512_castps_pd(t[g + 1]),
                d = _mm512_castps_pd(t[g + 3]);
        u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
        u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
    }
    _Pragma("GCC unroll 16") for (int k = 0; k < 4; k++) {
        __m512 lo01 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88), hi01 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xdd);
        __m512 lo23 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88),
               hi23 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xdd);
        v[k] = _mm512_shuffle_f32x4(lo01, lo23, 0x88);
        v[8 + k] = _mm512_shuffle_f32x4(lo01, lo23, 0xdd);
        v[4 + k] = _mm512_shuffle_f32x4(hi01, hi23, 0x88);
        v[12 + k] = _mm512_shuffle_f32x4(hi01, hi23, 0xdd);
    }
}
#define V_TRANSPOSE(v) avx512_transpose_f32(v)
/* softcap: the vector tanh of kernels/score_mods.h */
#define FA_TANH_VECTOR 1

#include "avx512_tiles.h"
