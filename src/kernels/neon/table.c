/* SPDX-License-Identifier: BSD-3-Clause */
/* The NEON (Advanced SIMD) tables: neon, which every aarch64 Linux CPU runs, and neon_bf16, the same
 * float kernels and a bf16 set on BFDOT for CPUs with FEAT_BF16 (neon_bf16.h). Plain code: nothing
 * here runs a BF16 instruction before dispatch.c has checked the CPU. */
#include "kernels/neon/neon.h"
#include "kernels/neon/neon_bf16.h"
#include "kernels/ref/ref.h"

const fa_kernels fa_kernels_neon = {
    .name = "neon", .requires = FA_CPU_ASIMD, .f32 = &fa_neon_kernels_f32, .f64 = &fa_neon_kernels_f64};

static const fa_kernels_bf16 bfdot_set = {
    .traits = {.input = FA_BF16,
               .accum = FA_F32,
               .lanes = 4,
               .pad_elems = FA_PAD_ELEMS_F32,
               .scores_keys = 4, /* neon_bf16_dot.c: 4 rows × 4 vectors */
               .scores_vecs = 4,
               .rows_rows = 4,
               .rows_vecs = 4,
               .score_tile = FA_TILE_KEY_MAJOR},
    .pad_k = FA_REF_BF16_PAD_K, /* ref's packs pad to it */
    .pack_pairs = fa_ref_bf16_pack_pairs,
    .pack_rows_t = fa_ref_bf16_pack_rows_t,
    .pack_rows_pairs = fa_ref_bf16_pack_rows_pairs,
    .rows_of = fa_neon_bf16_rows_of,
    .pairs_of = fa_neon_bf16_pairs_of,
    .dot = fa_neon_bf16_dot,
    .online_softmax_pairs = fa_neon_bf16_online_softmax_pairs,
    .release = fa_neon_bf16_release,
};

const fa_kernels fa_kernels_neon_bf16 = {.name = "neon_bf16",
                                         .requires = FA_CPU_ASIMD | FA_CPU_BF16,
                                         .f32 = &fa_neon_kernels_f32,
                                         .f64 = &fa_neon_kernels_f64,
                                         .bf16 = &bfdot_set};
