/* SPDX-License-Identifier: BSD-3-Clause */
/* One element type's half of a SIMD table (fa_<isa>_kernels_<sfx>) and the tests' entry points to
 * its exp2 and tanh, from the shared kernels and the ISA's vocabulary (simd/simd.h); last in each
 * ISA's template, which then ends. The transposed pack is the ISA's own file's
 * (fa_<isa>_pack_transposed_<sfx>, <isa>_pack.c), declared by the template. */

#define FA_ISA_NAME(n) FA_CAT(FA_CAT(fa_, FA_ISA), FA_CAT(n, FA_SFX))

/* scores_stored and accumulate_stored (simd/half_operands.h): the float half only, whose ISA file
 * defines V_LOAD_STORED */
#ifdef V_LOAD_STORED
#include "kernels/simd/half_operands.h"
#define FA_SCORES_STORED_OP     FA_NAME(scores_stored_)
#define FA_ACCUMULATE_STORED_OP FA_NAME(accumulate_stored_)
#else
#define FA_SCORES_STORED_OP     NULL /* ref's: no driver reads stored rows into double */
#define FA_ACCUMULATE_STORED_OP NULL
#endif

/* widen: simd/widen.h's where the float half asks for it (FA_WIDEN_SIMD: avx2, avx512), else the
 * ISA's own FA_WIDEN_OP (neon_widen.c) or NULL (ref's) for double, which no driver widens into */
#ifdef FA_WIDEN_SIMD
#include "kernels/simd/widen.h"
#define FA_WIDEN_OP FA_ISA_NAME(_widen_)
#endif

/* dropout_probs and dropout_score_grad: the ISA's own where it has them (avx512's float half),
 * else NULL, ref's (the same bits) */
#ifndef FA_DROPOUT_PROBS_OP
#define FA_DROPOUT_PROBS_OP      NULL
#define FA_DROPOUT_SCORE_GRAD_OP NULL
#endif

const FA_CAT(fa_kernels_, FA_SFX) FA_ISA_NAME(_kernels_) = {
    .traits = {.input = sizeof(FA_T) == 4 ? FA_F32 : FA_F64,
               .accum = sizeof(FA_T) == 4 ? FA_F32 : FA_F64,
               .lanes = FA_LANES,
               .pad_elems = FA_LINE,
               .scores_keys = FA_SCORES_KEYS,
               .scores_vecs = FA_SCORES_VECS,
               .rows_rows = FA_ROWS_ROWS, /* weighted_rows.h: 1-2 rows take up to FA_ROWS_FEW_VECS */
               .rows_vecs = FA_ROWS_VECS,
               .score_tile = FA_TILE_KEY_MAJOR},
    .scores = FA_NAME(tile_scores_),
    .scores_rows = FA_NAME(tile_scores_rows_),
    .pack_transposed = FA_ISA_NAME(_pack_transposed_),
    .online_softmax = FA_NAME(online_softmax_),
    .accumulate = FA_NAME(accumulate_),
    .accumulate_t = FA_NAME(accumulate_t_),
    .probabilities = FA_NAME(probabilities_),
    .score_grad = FA_NAME(score_grad_),
    .modify = FA_NAME(modify_),
    .scale_grad = FA_NAME(scale_grad_),
    .widen = FA_WIDEN_OP,
    .scores_stored = FA_SCORES_STORED_OP,
    .accumulate_stored = FA_ACCUMULATE_STORED_OP,
    .dropout_probs = FA_DROPOUT_PROBS_OP,
    .dropout_score_grad = FA_DROPOUT_SCORE_GRAD_OP};

/* For the tests: fn of n values, as the kernels compute it; the tail is masked, so x and y are
 * touched only within n. */
#define FA_ENTRY_POINT(name, fn)                                                      \
    void FA_ISA_NAME(name)(const FA_T *x, FA_T *y, int64_t n)                         \
    {                                                                                 \
        int64_t i = 0;                                                                \
        for (; i + FA_LANES <= n; i += FA_LANES) V_STOREU(y + i, fn(V_LOADU(x + i))); \
        if (i < n) {                                                                  \
            vtail m = V_TAIL(n - i);                                                  \
            V_STORE_TAIL(y + i, m, fn(V_LOAD_TAIL(x + i, m)));                        \
        }                                                                             \
    }
FA_ENTRY_POINT(_exp2_, FA_NAME(exp2_))
#if FA_TANH_VECTOR
FA_ENTRY_POINT(_tanh_, FA_NAME(tanh_))
#endif
#undef FA_ENTRY_POINT

#undef FA_ISA_NAME
#undef FA_WIDEN_OP
#undef FA_WIDEN_SIMD
#undef FA_SCORES_STORED_OP
#undef FA_ACCUMULATE_STORED_OP
#undef FA_DROPOUT_PROBS_OP
#undef FA_DROPOUT_SCORE_GRAD_OP
#undef V_LOAD_STORED
#undef FA_HALF_VECS
#undef FA_HALF_VECS_FEW
#undef FA_HALF_VECS_ONE
#undef V_LOAD_BF16_PAIRS
#undef V_LOAD_BF16_RUN
#undef V_UNZIP
#undef V_ZIP
#undef V_REDUCE_ADD_8
#undef FA_FEW_ROWS
#undef FA_PREFETCH_KEYS
#undef FA_FEW_ROWS_KEYS
#undef FA_SCORES_KEYS
#undef FA_SCORES_VECS
#undef FA_ROWS_ROWS
#undef FA_MAX_CHAINS
#undef FA_ROWS_VECS
#undef FA_ROWS_FEW_VECS
#undef FA_LINE
#undef FA_LINE_VECS
#undef FA_EXP2_LOW
#undef FA_EXP2_DEGREE
#undef FA_MM
#undef FA_MM2
#undef FA_MM3
#undef FA_PREFETCH
#undef FA_HINT_L1
#undef FA_HINT_L2
#undef FA_INLINE
