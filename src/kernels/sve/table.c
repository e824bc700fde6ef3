/* SPDX-License-Identifier: BSD-3-Clause */
/* The SVE tables, once per vector length compiled (sve_tiles.h says why): sve, and sve_bf16, the same
 * float kernels and a bf16 set on SVE's BFDOT (sve_bf16.h) for CPUs with FEAT_BF16. Each requires SVE
 * at exactly its length, and runtime/dispatch.c names the one of the calling thread's length. A table
 * of its own, as neon_bf16 is beside neon: a table requires all of its features, and a CPU with SVE
 * and no BF16 (A64FX) runs the float kernels. This file is plain, so nothing here runs an SVE or BF16
 * instruction before the check. */
#include "kernels/neon/neon_bf16.h"
#include "kernels/ref/ref.h"
#include "kernels/sve/sve.h"

#define FA_SVE_REQUIRES(bits) (FA_CPU_ASIMD | FA_CPU_SVE | FA_CPU_SVE_VL##bits)

#define FA_SVE_TABLES(bits)                                                                          \
    const fa_kernels fa_kernels_sve##bits = {.name = "sve",                                          \
                                             .requires = FA_SVE_REQUIRES(bits),                      \
                                             .f32 = &fa_sve##bits##_kernels_f32,                     \
                                             .f64 = &fa_sve##bits##_kernels_f64};                    \
    static const fa_kernels_bf16 sve##bits##_bf16_set = {                                            \
        .traits = {.input = FA_BF16,                                                                 \
                   .accum = FA_F32,                                                                  \
                   .lanes = (bits > 512 ? 512 : bits) / 32,                                          \
                   .pad_elems = FA_PAD_ELEMS_F32,                                                    \
                   .scores_keys = 4, /* sve_bf16.h: 4 rows × 4 vectors */                           \
                   .scores_vecs = 4,                                                                 \
                   .rows_rows = 4,                                                                   \
                   .rows_vecs = 4,                                                                   \
                   .score_tile = FA_TILE_KEY_MAJOR},                                                 \
        .pad_k = FA_REF_BF16_PAD_K, /* ref's packs pad to it */                                      \
        .pack_pairs = fa_ref_bf16_pack_pairs,                                                        \
        .pack_rows_t = fa_ref_bf16_pack_rows_t,                                                      \
        .pack_rows_pairs = fa_ref_bf16_pack_rows_pairs,                                              \
        .rows_of = fa_neon_bf16_rows_of,                                                             \
        .pairs_of = fa_neon_bf16_pairs_of,                                                           \
        .dot = fa_sve##bits##_bf16_dot,                                                              \
        .online_softmax_pairs = fa_sve##bits##_bf16_online_softmax_pairs,                            \
        .release = fa_neon_bf16_release,                                                             \
    };                                                                                               \
    const fa_kernels fa_kernels_sve_bf16_##bits = {.name = "sve_bf16",                               \
                                                   .requires = FA_SVE_REQUIRES(bits) | FA_CPU_BF16 | \
                                                               FA_CPU_SVE_BF16,                      \
                                                   .f32 = &fa_sve##bits##_kernels_f32,               \
                                                   .f64 = &fa_sve##bits##_kernels_f64,               \
                                                   .bf16 = &sve##bits##_bf16_set};
FA_SVE_TABLES(128)
FA_SVE_TABLES(256)
FA_SVE_TABLES(512)
FA_SVE_TABLES(1024)
FA_SVE_TABLES(2048)
