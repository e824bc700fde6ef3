/* SPDX-License-Identifier: BSD-3-Clause */
/* Dropout's keep mask on probability tiles (dropout.h). A tile is walked 16 query rows (one
 * generator block, FA_PHILOX_LANES) by 4 keys (one Philox call's outputs) at a time: the rows are
 * the lanes, as in the transposed tiles, so each output word is one tile column's 16 entries. The
 * generator is integer arithmetic, exact on every ISA: on x86-64 the tile loops are compiled for
 * AVX-512, AVX2 and baseline (target_clones) and the CPU picks one at load time, with the same bits. */
#include "drivers/dropout.h"

#include <math.h>

#include "kernels/philox.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define FA_DROPOUT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef FA_DROPOUT_CLONES
#define FA_DROPOUT_CLONES
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

/* One element type's tile loops (T the accumulation type, SFX its suffix). */
#define FA_DROPOUT_TILES(T, SFX)                                                                             \
    FA_DROPOUT_CLONES void fa_dropout_probs_##SFX(const fa_problem *p, int64_t batch, int64_t q_head,        \
                                                  int64_t row0, int64_t rows, int64_t col0, int64_t cols,    \
                                                  T *s, int64_t ld)                                          \
    {                                                                                                        \
        const fa_dropout_stream st = stream_of_problem(p, batch, q_head);                                    \
        const T kept = (T)(1.0 / (1.0 - p->dropout_p));                                                      \
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
    FA_DROPOUT_CLONES void fa_dropout_score_grad_##SFX(                                                      \
        const fa_problem *p, int64_t batch, int64_t q_head, int64_t row0, int64_t rows, int64_t col0,        \
        int64_t cols, T *pt, T *ds, const T *delta, int64_t ld)                                              \
    {                                                                                                        \
        const fa_dropout_stream st = stream_of_problem(p, batch, q_head);                                    \
        const T kept = (T)(1.0 / (1.0 - p->dropout_p));                                                      \
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
