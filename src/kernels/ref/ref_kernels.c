/* SPDX-License-Identifier: BSD-3-Clause */
/* The portable kernel table ("ref"): the reference every optimized table is tested against. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "kernels/half.h"
#include "kernels/quant.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "kernels/ref/ref_pack.h"

/* exp with results below the smallest normal flushed to +0, as every table computes probabilities
 * (the SIMD tables' exp2 says why: a subnormal probability makes every FMA that reads it about 30x
 * slower on Intel cores and is below the row sum's rounding). A comparison after exp rather than
 * FTZ/DAZ in MXCSR: subnormal inputs keep IEEE semantics and the result does not depend on the
 * thread's MXCSR. NaN compares false and passes. */
static inline float exp_flushed_f32(float x)
{
    float p = expf(x);
    return p < FLT_MIN ? 0.0f : p;
}

static inline double exp_flushed_f64(double x)
{
    double p = exp(x);
    return p < DBL_MIN ? 0.0 : p;
}

#define FA_T    float
#define FA_SFX  f32
#define FA_EXP  exp_flushed_f32
#define FA_TANH tanhf
#include "ref_tiles.h"
#undef FA_T
#undef FA_SFX
#undef FA_EXP
#undef FA_TANH

#define FA_T    double
#define FA_SFX  f64
#define FA_EXP  exp_flushed_f64
#define FA_TANH tanh
#include "ref_tiles.h"
#undef FA_T
#undef FA_SFX
#undef FA_EXP
#undef FA_TANH

/* ref is scalar code: no vectors, no register blocks; its layouts are the contract's. */
#define FA_REF_SET(SFX, DTYPE, PAD)                                                                  \
    {                                                                                                \
        .traits = {.input = DTYPE,                                                                   \
                   .accum = DTYPE,                                                                   \
                   .lanes = 1,                                                                       \
                   .pad_elems = PAD,                                                                 \
                   .scores_keys = 1,                                                                 \
                   .scores_vecs = 1,                                                                 \
                   .rows_rows = 1,                                                                   \
                   .rows_vecs = 1,                                                                   \
                   .score_tile = FA_TILE_KEY_MAJOR},                                                 \
        .scores = ref_scores_##SFX, .scores_rows = ref_scores_rows_##SFX,                            \
        .pack_transposed = fa_pack_transposed_##SFX, .online_softmax = ref_online_softmax_##SFX,     \
        .accumulate = ref_accumulate_##SFX, .accumulate_t = ref_accumulate_t_##SFX,                  \
        .probabilities = ref_probabilities_##SFX, .score_grad = ref_score_grad_##SFX,                \
        .modify = ref_modify_##SFX, .scale_grad = ref_scale_grad_##SFX, .widen = ref_widen_##SFX,    \
        .scores_stored = ref_scores_stored_##SFX, .accumulate_stored = ref_accumulate_stored_##SFX,  \
        .dropout_probs = ref_dropout_probs_##SFX, .dropout_score_grad = ref_dropout_score_grad_##SFX \
    }

static const fa_kernels_f32 ref_f32 = FA_REF_SET(f32, FA_F32, FA_PAD_ELEMS_F32);
static const fa_kernels_f64 ref_f64 = FA_REF_SET(f64, FA_F64, FA_PAD_ELEMS_F64);

/* The bf16 set's softmax (ref_pairs.c): ref's float softmax over a transposed accumulator. */
void fa_ref_online_softmax_t_f32(int64_t rows, int64_t ld, int64_t cols, float scale, float *s,
                                 float *row_max, float *row_sum, float *acc, int64_t acc_dim)
{
    ref_online_softmax_strided_f32(rows, ld, cols, scale, s, row_max, row_sum, acc, 1, ld, acc_dim);
}

/* Every operation is here: the table the others fall back on (select.c). */
const fa_kernels fa_kernels_ref = {.name = "ref", .requires = 0, .f32 = &ref_f32, .f64 = &ref_f64};
