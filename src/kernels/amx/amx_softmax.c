/* SPDX-License-Identifier: BSD-3-Clause */
/* The amx table's online softmax (fa_kernels_bf16.online_softmax_pairs): the avx512 table's, over
 * its own vocabulary (avx512_vocab.h, float), with the transposed accumulator and P written in
 * pairs of keys (simd/softmax_body.h), rounded by vcvtne2ps2bf16 and interleaved by vpermw (AVX-512
 * BF16 and BW, which this file is compiled for and the avx512 table does not require). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/amx/amx.h"
#include "kernels/exp2_poly.h"

typedef __m512 vec;
typedef __mmask16 mask;
#define FA_T          float
#define FA_SFX        f32
#define FA_PS         ps
#define FA_LANES      16
#define FA_EXP2_COEF  fa_exp2_floor_coef_f32
#define FA_EXP2_FLOOR 1
#include "kernels/avx512/avx512_vocab.h"

#define FA_MAX_CHAINS 4 /* as the avx512 table's (avx512_tiles.h says why) */
#define FA_PAIRS_PAD  FA_AMX_PAD_K
/* Keys c and c + 1 of 16 rows: rounded to nearest even (p is never subnormal, which the instruction
 * would flush), p0's 16 values in the low half, then interleaved word by word. */
#define FA_PAIRS_STORE(dst, p0, p1) \
    _mm512_storeu_si512((dst), _mm512_permutexvar_epi16(interleave, (__m512i)_mm512_cvtne2ps_pbh((p1), (p0))))
static const uint16_t interleave_words[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                              8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
#define interleave _mm512_loadu_si512(interleave_words)
#include "kernels/simd/softmax_body.h"

void fa_amx_online_softmax_pairs(int64_t rows, int64_t ld, int64_t cols, float scale, float *s,
                                 float *row_max, float *row_sum, float *acc, int64_t acc_dim, uint16_t *pp)
{
    online_softmax_body_f32(1, 1, scale, rows, ld, cols, s, row_max, row_sum, acc, ld, acc_dim, pp);
}
