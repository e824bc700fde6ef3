/* SPDX-License-Identifier: BSD-3-Clause */
/* Dropout's keep mask on probability tiles (dropout.h). A tile is walked 16 query rows (one
 * generator block, FA_PHILOX_LANES) by 4 keys (one Philox call's outputs) at a time: the rows are
 * the lanes, as in the transposed tiles, so each output word is one tile column's 16 entries. The
 * generator is integer arithmetic, exact everywhere: on x86-64 CPUs with AVX-512 (asked of the CPU,
 * not of the kernel table: the bits are the same either way) the f32 tiles and every generator
 * block run on 512-bit vectors, elsewhere the portable loops below, with the same bits. */
#include "drivers/dropout.h"

#include <math.h>

#include "kernels/philox.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FA_DROPOUT_AVX512 1
#define FA_AVX512         __attribute__((target("avx512f")))
#endif

uint64_t fa_dropout_threshold(double p)
{
    return (uint64_t)floor((1.0 - p) * 4294967296.0);
}

fa_dropout_stream fa_dropout_stream_of(uint64_t seed, uint64_t offset, double p, int64_t heads, int64_t b,
                                       int64_t h)
{
    const uint64_t s = offset + (uint64_t)b * (uint64_t)heads + (uint64_t)h; /* mod 2^64 */
    fa_dropout_stream st = {{(uint32_t)seed, (uint32_t)(seed >> 32)},
                            {(uint32_t)s, (uint32_t)(s >> 32)},
                            fa_dropout_threshold(p)};
    return st;
}

void fa_dropout_keep_bytes(const fa_dropout_stream *st, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                           uint8_t *mask, int64_t ld)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            const int64_t i = i0 + r, j = j0 + c;
            const uint32_t ctr[4] = {st->stream[0], st->stream[1], (uint32_t)(j >> 2), (uint32_t)i};
            uint32_t x[4];
            fa_philox4x32_10(ctr, st->key, x);
            mask[r * ld + c] = (uint64_t)x[j & 3] < st->threshold;
        }
}

static fa_dropout_stream stream_of_problem(const fa_problem *p, int64_t batch, int64_t q_head)
{
    return fa_dropout_stream_of(p->dropout_seed, p->dropout_offset, p->dropout_p, p->dropout_heads,
                                p->dropout_batch0 + batch, q_head);
}

/* One element type's portable tile loops (T the accumulation type, SFX its suffix). */
#define FA_DROPOUT_TILES(T, SFX)                                                                             \
    void fa_dropout_probs_portable_##SFX(const fa_problem *p, int64_t batch, int64_t q_head, int64_t row0,   \
                                         int64_t rows, int64_t col0, int64_t cols, T *s, int64_t ld)         \
    {                                                                                                        \
        const fa_dropout_stream st = stream_of_problem(p, batch, q_head);                                    \
        const T kept = (T)(1.0 / (1.0 - p->dropout_p));                                                      \
        row0 += p->dropout_row0, col0 += p->dropout_key0; /* the mask's indices (problem.h) */               \
        for (int64_t r0 = 0; r0 < rows; r0 += FA_PHILOX_LANES) {                                             \
            const int n = rows - r0 < FA_PHILOX_LANES ? (int)(rows - r0) : FA_PHILOX_LANES;                  \
            for (int64_t g = col0 >> 2; g <= (col0 + cols - 1) >> 2; g++) {                                  \
                uint32_t x[4][FA_PHILOX_LANES];                                                              \
                fa_philox_lanes(st.stream[0], st.stream[1], (uint32_t)g, (uint32_t)(row0 + r0), st.key, x);  \
                for (int w = 0; w < 4; w++) {                                                                \
                    const int64_t j = 4 * g + w;                                                             \
                    if (j < col0 || j >= col0 + cols) continue;                                              \
                    T *col = s + (j - col0) * ld + r0;                                                       \
                    if (n == FA_PHILOX_LANES)                                                                \
                        for (int l = 0; l < FA_PHILOX_LANES; l++)                                            \
                            col[l] *= (uint64_t)x[w][l] < st.threshold ? kept : (T)0;                        \
                    else                                                                                     \
                        for (int l = 0; l < n; l++)                                                          \
                            col[l] *= (uint64_t)x[w][l] < st.threshold ? kept : (T)0;                        \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
    }                                                                                                        \
                                                                                                             \
    void fa_dropout_score_grad_portable_##SFX(const fa_problem *p, int64_t batch, int64_t q_head,            \
                                              int64_t row0, int64_t rows, int64_t col0, int64_t cols, T *pt, \
                                              T *ds, const T *delta, int64_t ld)                             \
    {                                                                                                        \
        const fa_dropout_stream st = stream_of_problem(p, batch, q_head);                                    \
        const T kept = (T)(1.0 / (1.0 - p->dropout_p));                                                      \
        row0 += p->dropout_row0, col0 += p->dropout_key0; /* the mask's indices (problem.h) */               \
        for (int64_t r0 = 0; r0 < rows; r0 += FA_PHILOX_LANES) {                                             \
            const int n = rows - r0 < FA_PHILOX_LANES ? (int)(rows - r0) : FA_PHILOX_LANES;                  \
            for (int64_t g = col0 >> 2; g <= (col0 + cols - 1) >> 2; g++) {                                  \
                uint32_t x[4][FA_PHILOX_LANES];                                                              \
                fa_philox_lanes(st.stream[0], st.stream[1], (uint32_t)g, (uint32_t)(row0 + r0), st.key, x);  \
                for (int w = 0; w < 4; w++) {                                                                \
                    const int64_t j = 4 * g + w;                                                             \
                    if (j < col0 || j >= col0 + cols) continue;                                              \
                    T *pc = pt + (j - col0) * ld + r0, *dc = ds + (j - col0) * ld + r0;                      \
                    for (int l = 0; l < n; l++) {                                                            \
                        const T m = (uint64_t)x[w][l] < st.threshold ? kept : (T)0;                          \
                        dc[l] = pc[l] * (dc[l] * m - delta[r0 + l]);                                         \
                        pc[l] *= m;                                                                          \
                    }                                                                                        \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        for (int64_t c = 0; c < cols; c++) /* the padding rows, as score_grad computes them */               \
            for (int64_t r = rows; r < ld; r++)                                                              \
                ds[c * ld + r] = pt[c * ld + r] * (ds[c * ld + r] - delta[r]);                               \
    }

FA_DROPOUT_TILES(float, f32)
FA_DROPOUT_TILES(double, f64)

#ifdef FA_DROPOUT_AVX512
/* fa_philox_lanes on one 512-bit vector a word: the 32x32 -> 64-bit products of the even and the odd
 * lanes (vpmuludq), their halves blended back into lanes, the three-way xor in one vpternlogd. */
FA_AVX512 static inline void lanes_avx512(const fa_dropout_stream *st, uint32_t g, uint32_t i0, __m512i x[4])
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

/* The lanes whose uniform is below the threshold. */
FA_AVX512 static inline __mmask16 kept_avx512(const fa_dropout_stream *st, __m512i x)
{
    if (st->threshold > UINT32_MAX) return 0xFFFF;
    return _mm512_cmplt_epu32_mask(x, _mm512_set1_epi32((int)(uint32_t)st->threshold));
}

FA_AVX512 static void probs_avx512_f32(const fa_problem *p, int64_t batch, int64_t q_head, int64_t row0,
                                       int64_t rows, int64_t col0, int64_t cols, float *s, int64_t ld)
{
    const fa_dropout_stream st = stream_of_problem(p, batch, q_head);
    const __m512 kept = _mm512_set1_ps((float)(1.0 / (1.0 - p->dropout_p)));
    row0 += p->dropout_row0, col0 += p->dropout_key0; /* the mask's indices (problem.h) */
    for (int64_t r0 = 0; r0 < rows; r0 += FA_PHILOX_LANES) {
        const __mmask16 real = (__mmask16)(rows - r0 >= 16 ? 0xFFFFu : (1u << (rows - r0)) - 1u);
        for (int64_t g = col0 >> 2; g <= (col0 + cols - 1) >> 2; g++) {
            __m512i x[4];
            lanes_avx512(&st, (uint32_t)g, (uint32_t)(row0 + r0), x);
            for (int w = 0; w < 4; w++) {
                const int64_t j = 4 * g + w;
                if (j < col0 || j >= col0 + cols) continue;
                float *col = s + (j - col0) * ld + r0;
                const __m512 m = _mm512_maskz_mov_ps(kept_avx512(&st, x[w]), kept);
                _mm512_mask_storeu_ps(col, real, _mm512_mul_ps(_mm512_maskz_loadu_ps(real, col), m));
            }
        }
    }
}

FA_AVX512 static void score_grad_avx512_f32(const fa_problem *p, int64_t batch, int64_t q_head, int64_t row0,
                                            int64_t rows, int64_t col0, int64_t cols, float *pt, float *ds,
                                            const float *delta, int64_t ld)
{
    const fa_dropout_stream st = stream_of_problem(p, batch, q_head);
    const __m512 kept = _mm512_set1_ps((float)(1.0 / (1.0 - p->dropout_p)));
    row0 += p->dropout_row0, col0 += p->dropout_key0; /* the mask's indices (problem.h) */
    for (int64_t r0 = 0; r0 < rows; r0 += FA_PHILOX_LANES) {
        const __mmask16 real = (__mmask16)(rows - r0 >= 16 ? 0xFFFFu : (1u << (rows - r0)) - 1u);
        const __m512 d = _mm512_maskz_loadu_ps(real, delta + r0);
        for (int64_t g = col0 >> 2; g <= (col0 + cols - 1) >> 2; g++) {
            __m512i x[4];
            lanes_avx512(&st, (uint32_t)g, (uint32_t)(row0 + r0), x);
            for (int w = 0; w < 4; w++) {
                const int64_t j = 4 * g + w;
                if (j < col0 || j >= col0 + cols) continue;
                float *pc = pt + (j - col0) * ld + r0, *dc = ds + (j - col0) * ld + r0;
                const __m512 m = _mm512_maskz_mov_ps(kept_avx512(&st, x[w]), kept);
                const __m512 pv = _mm512_maskz_loadu_ps(real, pc), dv = _mm512_maskz_loadu_ps(real, dc);
                _mm512_mask_storeu_ps(dc, real, _mm512_mul_ps(pv, _mm512_sub_ps(_mm512_mul_ps(dv, m), d)));
                _mm512_mask_storeu_ps(pc, real, _mm512_mul_ps(pv, m));
            }
        }
    }
    for (int64_t c = 0; c < cols; c++) /* the padding rows, as score_grad computes them */
        for (int64_t r = rows; r < ld; r++) ds[c * ld + r] = pt[c * ld + r] * (ds[c * ld + r] - delta[r]);
}
#endif

#ifdef FA_DROPOUT_AVX512
/* Whether this CPU runs the AVX-512 loops (libgcc's CPUID and XCR0 check, made once at load). */
static int on_avx512(void)
{
    return __builtin_cpu_supports("avx512f");
}
#endif

void fa_dropout_probs_f32(const fa_problem *p, int64_t batch, int64_t q_head, int64_t row0, int64_t rows,
                          int64_t col0, int64_t cols, float *s, int64_t ld)
{
#ifdef FA_DROPOUT_AVX512
    if (on_avx512()) {
        probs_avx512_f32(p, batch, q_head, row0, rows, col0, cols, s, ld);
        return;
    }
#endif
    fa_dropout_probs_portable_f32(p, batch, q_head, row0, rows, col0, cols, s, ld);
}

void fa_dropout_probs_f64(const fa_problem *p, int64_t batch, int64_t q_head, int64_t row0, int64_t rows,
                          int64_t col0, int64_t cols, double *s, int64_t ld)
{
    fa_dropout_probs_portable_f64(p, batch, q_head, row0, rows, col0, cols, s, ld);
}

void fa_dropout_score_grad_f32(const fa_problem *p, int64_t batch, int64_t q_head, int64_t row0, int64_t rows,
                               int64_t col0, int64_t cols, float *pt, float *ds, const float *delta,
                               int64_t ld)
{
#ifdef FA_DROPOUT_AVX512
    if (on_avx512()) {
        score_grad_avx512_f32(p, batch, q_head, row0, rows, col0, cols, pt, ds, delta, ld);
        return;
    }
#endif
    fa_dropout_score_grad_portable_f32(p, batch, q_head, row0, rows, col0, cols, pt, ds, delta, ld);
}

void fa_dropout_score_grad_f64(const fa_problem *p, int64_t batch, int64_t q_head, int64_t row0, int64_t rows,
                               int64_t col0, int64_t cols, double *pt, double *ds, const double *delta,
                               int64_t ld)
{
    fa_dropout_score_grad_portable_f64(p, batch, q_head, row0, rows, col0, cols, pt, ds, delta, ld);
}
