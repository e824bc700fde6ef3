/* SPDX-License-Identifier: BSD-3-Clause */
/* The avx512_bf16 table: the avx512 table's float kernels and a bf16 set on vdpbf16ps, the packs
 * and the softmax of the amx table (AVX-512 BW and BF16, no tiles). Plain code: nothing here runs
 * an AVX-512 instruction before select.c has checked the CPU. */
#include "kernels/amx/amx.h"
#include "kernels/avx512/avx512.h"
#include "kernels/avx512_bf16/avx512_bf16.h"

static const fa_kernels_bf16 dpbf16_set = {
    .traits = {.input = FA_BF16,
               .accum = FA_F32,
               .lanes = 16,
               .pad_elems = FA_PAD_ELEMS_F32,
               .scores_keys = 6, /* dpbf16_dot.c: 6 rows × 4 vectors */
               .scores_vecs = 4,
               .rows_rows = 6,
               .rows_vecs = 4,
               .score_tile = FA_TILE_KEY_MAJOR},
    .pad_k = FA_AMX_PAD_K, /* the shared packs pad to it */
    .pack_pairs = fa_amx_pack_pairs,
    .pack_rows_t = fa_amx_pack_rows_t,
    .pack_rows_pairs = fa_amx_pack_rows_pairs,
    .rows_of = fa_amx_rows_of,
    .pairs_of = fa_amx_pairs_of,
    .dot = fa_avx512_bf16_dot,
    .online_softmax_pairs = fa_amx_online_softmax_pairs,
    .release = fa_avx512_bf16_release,
};

const fa_kernels fa_kernels_avx512_bf16 = {.name = "avx512_bf16",
                                           .requires = FA_CPU_AVX512F | FA_CPU_AVX512DQ | FA_CPU_AVX512BW |
                                                       FA_CPU_AVX512VL | FA_CPU_AVX512BF16,
                                           .f32 = &fa_avx512_kernels_f32,
                                           .f64 = &fa_avx512_kernels_f64,
                                           .bf16 = &dpbf16_set};
