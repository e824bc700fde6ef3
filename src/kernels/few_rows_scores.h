/* SPDX-License-Identifier: BSD-3-Clause */
/* Scores for a tile of at most FA_FEW_ROWS real query rows (a decode step), part of the x86
 * templates' score kernel (tile_scores.h includes it), after the table's vocabulary (simd/simd.h):
 *   FA_T, FA_LANES, FA_NAME, FA_INLINE, FA_UNROLL, vec, V_ZERO, V_LOAD, V_FMA, V_REDUCE_ADD, and
 *   V_LOAD_PART(p, n): lanes [0, n) of p (n >= 1), the others 0, nothing past p + n read;
 *   FA_FEW_ROWS_KEYS(rows): keys per block, so that rows·keys accumulators, `rows` query vectors
 *   and one key vector fit the register file (at most 8 keys).
 *
 * With one real row in a 16-row tile, the broadcast form of the scores spends a load and a full
 * FMA (15 lanes of padding) on every key element. Here each real query row is held as vectors
 * over dim and every key row is streamed once with full-width loads, then reduced per key: up to
 * 16x fewer FMAs and loads, and the K stream runs at memory speed. A table may sum in this order
 * for small tiles (kernels.h): the choice depends on the tile, never on the thread. */
#include <immintrin.h> /* _mm_prefetch */

#include "flashattn.h" /* FA_MAX_HEAD_DIM: the bound of the query rows held on the stack */

#define FA_FEW_ROWS 4
#define FA_PREFETCH_KEYS 16

FA_INLINE void FA_NAME(dot_block_)(int nk, int nr, int64_t dim, const FA_T (*q)[FA_MAX_HEAD_DIM], const FA_T *k,
                                   int64_t k_stride, FA_T *s, int64_t ld)
{
    vec acc[8][FA_FEW_ROWS];
    FA_UNROLL for (int i = 0; i < nk; i++)
        FA_UNROLL for (int r = 0; r < nr; r++) acc[i][r] = V_ZERO();
    for (int64_t x = 0; x < dim; x += FA_LANES) {
        vec qv[FA_FEW_ROWS];
        FA_UNROLL for (int r = 0; r < nr; r++) qv[r] = V_LOAD(q[r] + x);
        FA_UNROLL for (int i = 0; i < nk; i++) {
            vec kv = V_LOAD_PART(k + i * k_stride + x, dim - x);
            FA_UNROLL for (int r = 0; r < nr; r++) acc[i][r] = V_FMA(kv, qv[r], acc[i][r]);
        }
    }
    FA_UNROLL for (int i = 0; i < nk; i++)
        FA_UNROLL for (int r = 0; r < nr; r++) s[i * ld + r] = V_REDUCE_ADD(acc[i][r]);
}

/* Instantiates (keys, rows) blocks whose accumulators fit the registers: the switch below turns
 * run-time edge sizes into compile-time ones; each size a function of its own (weighted_rows.h
 * says why). */
#define FA_DOT_FN(NK, NR) FA_NAME(dot_block_##NK##_##NR##_)
#define FA_DOT_DEFINE(NK, NR)                                                                                  \
    static __attribute__((noinline)) void FA_DOT_FN(NK, NR)(int64_t dim, const FA_T (*q)[FA_MAX_HEAD_DIM],     \
                                                            const FA_T *k, int64_t k_stride, FA_T *s, int64_t ld) \
    {                                                                                                          \
        if ((NK) <= FA_FEW_ROWS_KEYS(NR)) FA_NAME(dot_block_)(NK, NR, dim, q, k, k_stride, s, ld);             \
    }
#define FA_DOT_DEFINE_KEYS(NR)                                                                                 \
    FA_DOT_DEFINE(1, NR) FA_DOT_DEFINE(2, NR) FA_DOT_DEFINE(3, NR) FA_DOT_DEFINE(4, NR) FA_DOT_DEFINE(5, NR)    \
    FA_DOT_DEFINE(6, NR) FA_DOT_DEFINE(7, NR) FA_DOT_DEFINE(8, NR)
FA_DOT_DEFINE_KEYS(1) FA_DOT_DEFINE_KEYS(2) FA_DOT_DEFINE_KEYS(3) FA_DOT_DEFINE_KEYS(4)
#define FA_DOT_CASE(NK, NR)                                                                                    \
    case (NK) * 16 + (NR):                                                                                     \
        FA_DOT_FN(NK, NR)(dim, q, k + c * k_stride, k_stride, s + c * ld, ld);                                 \
        break;
#define FA_DOT_ROWS_CASES(NR)                                                                                  \
    FA_DOT_CASE(1, NR) FA_DOT_CASE(2, NR) FA_DOT_CASE(3, NR) FA_DOT_CASE(4, NR) FA_DOT_CASE(5, NR)            \
    FA_DOT_CASE(6, NR) FA_DOT_CASE(7, NR) FA_DOT_CASE(8, NR)

static void FA_NAME(scores_few_rows_)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const FA_T *qt,
                                      const FA_T *k, int64_t k_stride, FA_T *s)
{
    /* the real rows, gathered out of the transposed pack into contiguous, zero-padded vectors */
    _Alignas(64) FA_T q[FA_FEW_ROWS][FA_MAX_HEAD_DIM];
    int64_t dim_pad = (dim + FA_LANES - 1) / FA_LANES * FA_LANES;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t x = 0; x < dim_pad; x++) q[r][x] = x < dim ? qt[x * ld + r] : 0;
    int keys = FA_FEW_ROWS_KEYS(rows);
    for (int64_t c = 0; c < cols; c += keys) {
        int nk = cols - c < keys ? (int)(cols - c) : keys;
        /* K streams from memory once: ask for the rows FA_PREFETCH_KEYS ahead, a line at a time */
        for (int64_t ahead = c + FA_PREFETCH_KEYS; ahead < c + FA_PREFETCH_KEYS + keys && ahead < cols; ahead++)
            for (int64_t x = 0; x < dim; x += 64 / (int64_t)sizeof(FA_T))
                _mm_prefetch((const char *)(k + ahead * k_stride + x), _MM_HINT_T0);
        switch (nk * 16 + (int)rows) {
            FA_DOT_ROWS_CASES(1) FA_DOT_ROWS_CASES(2) FA_DOT_ROWS_CASES(3) FA_DOT_ROWS_CASES(4)
        default: break;
        }
        for (int i = 0; i < nk; i++)
            for (int64_t r = rows; r < ld; r++) s[(c + i) * ld + r] = 0; /* padding rows: defined anyway */
    }
}

#undef FA_DOT_ROWS_CASES
#undef FA_DOT_CASE
#undef FA_DOT_DEFINE_KEYS
#undef FA_DOT_DEFINE
#undef FA_DOT_FN
