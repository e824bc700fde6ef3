/* SPDX-License-Identifier: BSD-3-Clause */
/* Dropout's keep mask (dropout.h): the stream of a (batch entry, query head), and the tile calls the
 * drivers make, which hand a tile and its mask indices to the kernel table's dropout operations
 * (kernels.h; ref's loops, or avx512's on 512-bit vectors: the same bits). */
#include "drivers/dropout.h"

#include <math.h>

uint32_t fa_dropout_threshold(double p)
{
    return (uint32_t)floor((1.0 - p) * 65536.0 + 0.5);
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
    if (cols <= 0) return;
    const int64_t g_first = j0 / FA_DROPOUT_GROUP, g_last = (j0 + cols - 1) / FA_DROPOUT_GROUP;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = g_first; g <= g_last; g++) { /* one generator call per group of keys */
            const uint32_t ctr[4] = {st->stream[0], st->stream[1], (uint32_t)g, (uint32_t)(i0 + r)};
            uint32_t x[4];
            fa_philox4x32_10(ctr, st->key, x);
            for (int e = 0; e < FA_DROPOUT_GROUP; e++) {
                const int64_t c = g * FA_DROPOUT_GROUP + e - j0;
                if (c >= 0 && c < cols) mask[r * ld + c] = (uint8_t)fa_dropout_kept(st, x[e / 2], e);
            }
        }
}

static fa_dropout_stream stream_of_problem(const fa_problem *p, int64_t batch, int64_t q_head)
{
    return fa_dropout_stream_of(p->dropout_seed, p->dropout_offset, p->dropout_p, p->dropout_heads,
                                p->dropout_batch0 + batch, q_head);
}

/* The tile's rows and keys are the mask's indices moved by the problem's origins (problem.h). */
#define FA_DROPOUT_CALLS(T, SFX)                                                                             \
    void fa_dropout_probs_##SFX(const fa_kernels_##SFX *k, const fa_problem *p, int64_t batch,               \
                                int64_t q_head, int64_t row0, int64_t rows, int64_t col0, int64_t cols,      \
                                T *s, int64_t ld)                                                            \
    {                                                                                                        \
        const fa_dropout_stream st = stream_of_problem(p, batch, q_head);                                    \
        k->dropout_probs(&st, row0 + p->dropout_row0, rows, col0 + p->dropout_key0, cols,                    \
                         (T)(1.0 / (1.0 - p->dropout_p)), s, ld);                                            \
    }                                                                                                        \
                                                                                                             \
    void fa_dropout_score_grad_##SFX(const fa_kernels_##SFX *k, const fa_problem *p, int64_t batch,          \
                                     int64_t q_head, int64_t row0, int64_t rows, int64_t col0, int64_t cols, \
                                     T *pt, T *ds, const T *delta, int64_t ld)                               \
    {                                                                                                        \
        const fa_dropout_stream st = stream_of_problem(p, batch, q_head);                                    \
        k->dropout_score_grad(&st, row0 + p->dropout_row0, rows, col0 + p->dropout_key0, cols,               \
                              (T)(1.0 / (1.0 - p->dropout_p)), pt, ds, delta, ld);                           \
    }

FA_DROPOUT_CALLS(float, f32)
FA_DROPOUT_CALLS(double, f64)
