/* SPDX-License-Identifier: BSD-3-Clause */
/* The score kernel, s[c][r] = sum_x qt[x][r]·k[c][x] (transposed tile, kernels.h), shared by the
 * SIMD templates (avx2_tiles.h, avx512_tiles.h, neon_tiles.h, sve_tiles.h), which include it after
 * their vocabulary (simd/simd.h): FA_T, FA_LANES, FA_NAME, FA_INLINE, FA_UNROLL, vec, V_ZERO,
 *   V_LOAD, V_STORE, V_SET1, V_FMA, and what few_rows_scores.h needs (V_LOAD_PART,
 *   FA_FEW_ROWS_KEYS, V_REDUCE_ADD);
 *   FA_SCORES_KEYS × FA_SCORES_VECS: the register block (avx2 6 × 2, avx512 6 × 4), chosen per ISA
 *   so that its accumulators, FA_SCORES_VECS query vectors and one broadcast fit the register file.
 * Defines FA_NAME(tile_scores_) and FA_NAME(tile_scores_rows_), the table's `scores` and `scores_rows`.
 *
 * Register block: NK keys × NV row vectors of accumulators; per dim step NV vector loads of the
 * packed queries and NK broadcasts of key elements feed NK·NV independent FMAs (load ports only:
 * nothing else takes an FMA-port slot but the store of each score vector once, at the block's end,
 * about 1.3 slots per vector of scores on Intel; simd/softmax.h counts the budget). Tiles of at most
 * FA_FEW_ROWS real rows (a decode step) take the row-oriented dot products instead. */
#include "kernels/few_rows_scores.h"

FA_INLINE void FA_NAME(scores_block_)(int nk, int nv, int64_t dim, const FA_T *qt, int64_t ld, const FA_T *k,
                                      int64_t k_stride, FA_T *s)
{
    vec acc[FA_SCORES_KEYS][FA_SCORES_VECS];
    FA_UNROLL
    for (int i = 0; i < nk; i++) {
        FA_UNROLL
        for (int j = 0; j < nv; j++) acc[i][j] = V_ZERO();
    }
    for (int64_t x = 0; x < dim; x++) {
        vec q[FA_SCORES_VECS];
        FA_UNROLL
        for (int j = 0; j < nv; j++) q[j] = V_LOAD(qt + x * ld + j * FA_LANES);
        FA_UNROLL
        for (int i = 0; i < nk; i++) {
            vec w = V_SET1(k[i * k_stride + x]);
            FA_UNROLL
            for (int j = 0; j < nv; j++) acc[i][j] = V_FMA(q[j], w, acc[i][j]);
        }
    }
    FA_UNROLL
    for (int i = 0; i < nk; i++) {
        FA_UNROLL
        for (int j = 0; j < nv; j++) V_STORE(s + i * ld + j * FA_LANES, acc[i][j]);
    }
}

/* Instantiates a (keys, vectors) block size: the switch below turns run-time edge sizes into
 * compile-time ones, so every block keeps its accumulators in registers. It lists the sizes of the
 * larger block of each axis over both ISAs (6 keys, 4 vectors); sizes beyond one ISA's own block
 * are never reached and compile to nothing. Each size is a function of its own (weighted_rows.h
 * says why). */
_Static_assert(FA_SCORES_KEYS <= 6 && FA_SCORES_VECS <= 4, "the switch below lists blocks up to 6 x 4");
#define FA_SCORES_FN(NK, NV) FA_NAME(scores_block_##NK##_##NV##_)
// clang-format off
#define FA_SCORES_DEFINE(NK, NV)                                                                             \
    static __attribute__((noinline)) void FA_SCORES_FN(NK, NV)(int64_t dim, const FA_T *qt, int64_t ld,      \
                                                               const FA_T *k, int64_t k_stride, FA_T *s)     \
    {                                                                                                        \
        if ((NK) <= FA_SCORES_KEYS && (NV) <= FA_SCORES_VECS)                                                \
            FA_NAME(scores_block_)((NK), (NV), dim, qt, ld, k, k_stride, s);                                 \
    }
#define FA_SCORES_DEFINE_KEYS(NK) FA_SCORES_DEFINE(NK, 1) FA_SCORES_DEFINE(NK, 2) \
    FA_SCORES_DEFINE(NK, 3) FA_SCORES_DEFINE(NK, 4)
FA_SCORES_DEFINE_KEYS(1) FA_SCORES_DEFINE_KEYS(2) FA_SCORES_DEFINE_KEYS(3)
FA_SCORES_DEFINE_KEYS(4) FA_SCORES_DEFINE_KEYS(5) FA_SCORES_DEFINE_KEYS(6)
#define FA_SCORES_CASE(NK, NV)                                                                               \
    case (NK) * 8 + (NV):                                                                                    \
        FA_SCORES_FN(NK, NV)(dim, qb, ld, kb, k_stride, sb);                                                 \
        break;
#define FA_SCORES_KEYS_CASES(NK)                                                                             \
    FA_SCORES_CASE(NK, 1) FA_SCORES_CASE(NK, 2) FA_SCORES_CASE(NK, 3) FA_SCORES_CASE(NK, 4)
    // clang-format on

    /* The rows [0, extent) of the tile (extent a multiple of FA_LANES, at most ld). */
    static void FA_NAME(scores_span_)(int64_t rows, int64_t ld, int64_t extent, int64_t cols, int64_t dim,
                                      const FA_T *qt, const FA_T *k, int64_t k_stride, FA_T *s)
{
    if (rows <= FA_FEW_ROWS) {
        FA_NAME(scores_few_rows_)(rows, ld, cols, dim, qt, k, k_stride, s);
        return;
    }
    for (int64_t c = 0; c < cols; c += FA_SCORES_KEYS) {
        int nk = cols - c < FA_SCORES_KEYS ? (int)(cols - c) : FA_SCORES_KEYS;
        for (int64_t r = 0; r < extent; r += FA_SCORES_VECS * FA_LANES) {
            int nv =
                (extent - r) / FA_LANES < FA_SCORES_VECS ? (int)((extent - r) / FA_LANES) : FA_SCORES_VECS;
            const FA_T *qb = qt + r;
            const FA_T *kb = k + c * k_stride;
            FA_T *sb = s + c * ld + r;
            // clang-format off
            switch (nk * 8 + nv) {
                FA_SCORES_KEYS_CASES(1) FA_SCORES_KEYS_CASES(2) FA_SCORES_KEYS_CASES(3)
                FA_SCORES_KEYS_CASES(4) FA_SCORES_KEYS_CASES(5) FA_SCORES_KEYS_CASES(6)
            default: break;
            }
            // clang-format on
        }
    }
}

static void FA_NAME(tile_scores_)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const FA_T *qt,
                                  const FA_T *k, int64_t k_stride, FA_T *s)
{
    FA_NAME(scores_span_)(rows, ld, ld, cols, dim, qt, k, k_stride, s);
}

static void FA_NAME(tile_scores_rows_)(int64_t rows, int64_t ld, int64_t cols, int64_t dim, const FA_T *qt,
                                       const FA_T *k, int64_t k_stride, FA_T *s)
{
    const int64_t extent = (rows + FA_LANES - 1) / FA_LANES * FA_LANES;
    FA_NAME(scores_span_)(rows, ld, extent < ld ? extent : ld, cols, dim, qt, k, k_stride, s);
}

#undef FA_SCORES_KEYS_CASES
#undef FA_SCORES_CASE
#undef FA_SCORES_DEFINE_KEYS
#undef FA_SCORES_DEFINE
#undef FA_SCORES_FN
