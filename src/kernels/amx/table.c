/* SPDX-License-Identifier: BSD-3-Clause */
/* The amx table: the avx512 table's f32 and f64 kernels, and a bf16 set whose products run on AMX
 * tiles (amx.h). Plain code: nothing here runs an AVX-512 or AMX instruction before select.c has
 * checked the CPU, its OS's tile state and the process's permission (FA_CPU_AMX_BF16). */
#include "kernels/amx/amx.h"
#include "kernels/avx512/avx512.h" /* the float halves */

const fa_kernels_bf16 fa_amx_kernels_bf16 = {
    .traits = {.input = FA_BF16,
               .accum = FA_F32,
               .lanes = 16,
               .pad_elems = FA_PAD_ELEMS_F32,
               .scores_keys = 32, /* a 2 × 2 block of 16 × 16 tiles */
               .scores_vecs = 2,
               .rows_rows = 32,
               .rows_vecs = 2,
               .score_tile = FA_TILE_KEY_MAJOR},
    .pad_k = FA_AMX_PAD_K,
    .pack_pairs = fa_amx_pack_pairs,
    .pack_rows_t = fa_amx_pack_rows_t,
    .pack_rows_pairs = fa_amx_pack_rows_pairs,
    .rows_of = fa_amx_rows_of,
    .pairs_of = fa_amx_pairs_of,
    .dot = fa_amx_dot,
    .online_softmax_pairs = fa_amx_online_softmax_pairs,
    .release = fa_amx_release,
};

const fa_kernels fa_kernels_amx = {.name = "amx",
                                   .requires = FA_CPU_AVX512F | FA_CPU_AVX512DQ | FA_CPU_AVX512BW |
                                               FA_CPU_AVX512VL | FA_CPU_AVX512BF16 | FA_CPU_AMX_BF16,
                                   .f32 = &fa_avx512_kernels_f32,
                                   .f64 = &fa_avx512_kernels_f64,
                                   .bf16 = &fa_amx_kernels_bf16};
