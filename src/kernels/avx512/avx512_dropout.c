/* SPDX-License-Identifier: BSD-3-Clause */
/* The avx512 float set's dropout operations (kernels.h, dropout_probs and dropout_score_grad): the
 * generator of kernels/philox.h on one 512-bit vector a word, FA_PHILOX_LANES = 16 rows of a column
 * per vector. Integer arithmetic, so ref's bits; the table shares them with avx512_bf16 and amx. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/avx512/avx512.h"
#include "kernels/philox.h"

/* fa_philox_lanes: the 32x32 -> 64-bit products of the even and the odd lanes (vpmuludq), their
 * halves blended back into lanes, the three-way xor in one vpternlogd. */
static inline void lanes(const fa_dropout_stream *st, uint32_t g, uint32_t i0, __m512i x[4])
{
    const __m512i m0 = _mm512_set1_epi32((int)FA_PHILOX_M0), m1 = _mm512_set1_epi32((int)FA_PHILOX_M1);
    __m512i a = _mm512_set1_epi32((int)st->stream[0]), b = _mm512_set1_epi32((int)st->stream[1]);
    __m512i c = _mm512_set1_epi32((int)g);
    __m512i d = _mm512_add_epi32(_mm512_set1_epi32((int)i0),
                                 _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    uint32_t k0 = st->key[0], k1 = st->key[1];
    for (int round = 0; round < 10; round++) {
        const __m512i even0 = _mm512_mul_epu32(a, m0), odd0 = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m0);
        const __m512i even1 = _mm512_mul_epu32(c, m1), odd1 = _mm512_mul_epu32(_mm512_srli_epi64(c, 32), m1);
        const __m512i lo0 = _mm512_mask_blend_epi32(0xAAAA, even0, _mm512_slli_epi64(odd0, 32));
        const __m512i hi0 = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even0, 32), odd0);
        const __m512i lo1 = _mm512_mask_blend_epi32(0xAAAA, even1, _mm512_slli_epi64(odd1, 32));
        const __m512i hi1 = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even1, 32), odd1);
        a = _mm512_ternarylogic_epi32(hi1, b, _mm512_set1_epi32((int)k0), 0x96);
        c = _mm512_ternarylogic_epi32(hi0, d, _mm512_set1_epi32((int)k1), 0x96);
        b = lo1, d = lo0;
        k0 += FA_PHILOX_W0, k1 += FA_PHILOX_W1;
    }
    x[0] = a, x[1] = b, x[2] = c, x[3] = d;
}

/* The lanes whose slice e of word x is below the threshold t (all of them at t = 2^16). With t
 * moved to the top half, the high slice compares as the whole word (x < t·2^16 exactly when
 * x / 2^16 < t) and the low one as the word shifted up: one compare, or a shift and a compare. */
static inline __mmask16 kept_lanes(const fa_dropout_stream *st, __m512i x, int e)
{
    if (st->threshold > 0xFFFFu) return 0xFFFF;
    const __m512i top = _mm512_set1_epi32((int)(st->threshold << 16));
    return _mm512_cmplt_epu32_mask(e & 1 ? x : _mm512_slli_epi32(x, 16), top);
}

/* The tile rows of the block at r0 that exist: all 16 but in the last block. */
static inline __mmask16 real_lanes(int n)
{
    return (__mmask16)(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
}

#define FA_AVX512_LANES(g, i) lanes(st, (uint32_t)(g), (uint32_t)(i), x)

void fa_avx512_dropout_probs_f32(const fa_dropout_stream *st, int64_t i0, int64_t rows, int64_t j0,
                                 int64_t cols, float kept, float *s, int64_t ld)
{
    const __m512 k = _mm512_set1_ps(kept);
    __m512i x[4];
    FA_DROPOUT_WALK(i0, rows, j0, cols, FA_AVX512_LANES, {
        float *col = s + c * ld + r0;
        const __mmask16 real = real_lanes(n);
        const __m512 m = _mm512_maskz_mov_ps(kept_lanes(st, x[e >> 1], e), k);
        _mm512_mask_storeu_ps(col, real, _mm512_mul_ps(_mm512_maskz_loadu_ps(real, col), m));
    })
}

void fa_avx512_dropout_score_grad_f32(const fa_dropout_stream *st, int64_t i0, int64_t rows, int64_t j0,
                                      int64_t cols, float kept, float *pt, float *ds, const float *delta,
                                      int64_t ld)
{
    const __m512 k = _mm512_set1_ps(kept);
    __m512i x[4];
    FA_DROPOUT_WALK(i0, rows, j0, cols, FA_AVX512_LANES, {
        float *pc = pt + c * ld + r0, *dc = ds + c * ld + r0;
        const __mmask16 real = real_lanes(n);
        const __m512 m = _mm512_maskz_mov_ps(kept_lanes(st, x[e >> 1], e), k),
                     d = _mm512_maskz_loadu_ps(real, delta + r0);
        const __m512 pv = _mm512_maskz_loadu_ps(real, pc), dv = _mm512_maskz_loadu_ps(real, dc);
        _mm512_mask_storeu_ps(dc, real, _mm512_mul_ps(pv, _mm512_sub_ps(_mm512_mul_ps(dv, m), d)));
        _mm512_mask_storeu_ps(pc, real, _mm512_mul_ps(pv, m));
    })
    for (int64_t c = 0; c < cols; c++) /* the padding rows, as score_grad computes them */
        for (int64_t r = rows; r < ld; r++) ds[c * ld + r] = pt[c * ld + r] * (ds[c * ld + r] - delta[r]);
}
