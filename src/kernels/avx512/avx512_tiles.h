/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX-512 table's half for one element type: its vocabulary (avx512_vocab.h: simd/simd.h's
 * names and exp2), then the shared kernels. Included by avx512_f32.c and avx512_f64.c, which define
 * first what differs between the two types:
 *   FA_T, FA_SFX, FA_PS (ps or pd: the intrinsics' suffix), FA_LANES, vec, mask (__mmask16 or
 *   __mmask8), V_TRANSPOSE, FA_TANH_VECTOR, FA_EXP2_COEF (the polynomial of kernels/exp2_poly.h) and
 *   FA_EXP2_FLOOR (1: exp2 splits x at floor(x), with AVX512DQ's vreduce; 0: at the nearest integer).
 *
 * One vector is 64 bytes: a score tile's line of rows is one vector (FA_LINE_VECS = 1). */
#include "kernels/avx512/avx512_vocab.h"

/* ---- S = Q·Kᵀ, transposed (kernels/tile_scores.h) ----
 * A 6 × 4 block: 24 accumulators + 4 query vectors + 1-2 broadcasts of the 32 registers, so each
 * dim step loads 4 vectors and broadcasts 6 keys for 24 FMAs. On an Intel Xeon (Sapphire Rapids VM) a
 * 512-bit load is not free for the FMA ports (16 FMAs beside 4 loads ran 14% slower than beside
 * none), and the 4 × 4 block (8 loads per 16 FMAs) ran a 64 × 64 tile in L1 4-6% slower than this
 * one, interleaved. Tiles of at most 4 rows: 8 keys a block for 1-2 rows, 4 for 3-4 (8 to 16
 * independent FMA chains). */
#define FA_SCORES_KEYS         6
#define FA_SCORES_VECS         4
#define FA_FEW_ROWS_KEYS(rows) ((rows) <= 2 ? 8 : 4)
#include "kernels/tile_scores.h"

/* ---- softmax, probabilities, score gradient (simd/softmax.h) ----
 * Four independent max chains: one max has a latency of 4 cycles on Intel and Zen cores, and the
 * first pass issues about one and a half ops per column, so one chain (or two) would wait on it. */
#define FA_MAX_CHAINS 4
#include "kernels/simd/softmax.h"

/* ---- accumulate, accumulate_t (simd/weighted_rows.h) ----
 * 6 rows × 4 vectors: 24 accumulators + 4 x vectors + 1-2 broadcasts (4 loads and 6 broadcasts per
 * 24 FMAs, as the score block above); 1-2 rows × 8 vectors, so that each x row (up to 128 floats)
 * is streamed once. */
#define FA_ROWS_ROWS     6
#define FA_ROWS_VECS     4
#define FA_ROWS_FEW_VECS 8
#include "kernels/simd/weighted_rows.h"

/* ---- softcap, ALiBi and bias (kernels/score_mods.h) ---- */
#include "kernels/score_mods.h"

/* the transposed pack, vectorised in its own file (avx512_pack.c) */
#include "kernels/avx512/avx512_pack.h"
#include "kernels/simd/table.h"

#undef FA_ISA
#undef FA_MM_PREFIX
#undef FA_TO_BITS3
#undef FA_TO_BITS2
#undef FA_FROM_BITS3
#undef FA_FROM_BITS2
