/* SPDX-License-Identifier: BSD-3-Clause */
/* The NEON table's half for one element type: its vocabulary (kernels/simd/simd.h) and exp2, then the
 * shared kernels. Included by neon_f32.c and neon_f64.c, which define first what differs between
 * the two types:
 *   FA_T, FA_SFX (f32 or f64: also the suffix of NEON's intrinsics), FA_LANES (of a 128-bit vector),
 *   vec, vmask (uint32x4_t or uint64x2_t), FA_U (u32 or u64: the intrinsics of vmask's lanes) and
 *   FA_UINT (their element type), FA_NAME(lane_weights_) (2^i in lane i) and FA_NAME(lane_index_)
 *   (i in lane i), V_MASK_NOT(m), V_POW2_OF_INTEGER(n) (2^n for an integral n in [LOW, HIGH]),
 *   FA_TANH_VECTOR, FA_EXP2_COEF and FA_EXP2_FLOOR (as avx512: 1 splits x at floor(x)).
 *
 * A 64-byte line is four vectors (FA_LINE_VECS = 4). AArch64 has 32 vector registers, as AVX-512,
 * so the register blocks are avx512's in count of vectors (a quarter of its width).
 *
 * What cannot be shared with the x86 tables, and why: NEON has no masked loads or stores, so a tail
 * (vtail) is a lane count and V_LOAD_TAIL / V_STORE_TAIL move lanes one at a time (only at the last
 * vector of a row of dim: never in the score tiles, whose rows are whole lines); a predicate is a
 * vector of all-ones lanes as on AVX2, and V_MASK_BITS sums lane weights (no movemask); and exp2
 * builds 2^n in the exponent field (no scalef). Everything else (the kernels of simd/, tile_scores.h,
 * few_rows_scores.h, score_mods.h, exp2_poly.h's polynomials, the exp2 framework and its flush) is
 * the x86 tables' code. */
#include "kernels/neon/neon_vocab.h"

/* ---- S = Q·Kᵀ, transposed (kernels/tile_scores.h) ----
 * A 6 × 4 block, as avx512's: 24 accumulators + 4 query vectors + 1 broadcast (LD1R, a load) of the
 * 32 registers; per dim step 4 loads and 6 broadcasts for 24 FMAs. Tiles of at most 4 rows: 8 keys a
 * block for 1-3 rows, 6 for 4 (at most 24 accumulators + 4 query vectors + 1 key vector). The budget
 * (gcc 12 -O2, object code): a dim step is 39 instructions, 24 FMAs, 10 loads, 5 other: 1.63 per
 * FMA. */
#define FA_SCORES_KEYS         6
#define FA_SCORES_VECS         4
#define FA_FEW_ROWS_KEYS(rows) ((rows) <= 3 ? 8 : 6)
#include "kernels/tile_scores.h"

/* ---- softmax, probabilities, score gradient (simd/softmax.h) ----
 * A line is four vectors: two max chains each, eight in all (FMAX's latency is 2-3 cycles). The
 * budget per 16 scores (a line), both passes: 124.5 instructions, 86 of them on the FP/SIMD pipes
 * and 24 register moves (src/README.md, "aarch64"). */
#define FA_MAX_CHAINS 2
#include "kernels/simd/softmax.h"

/* ---- accumulate, accumulate_t (simd/weighted_rows.h) ----
 * 6 rows × 4 vectors: 24 accumulators + 4 x vectors + 1-2 broadcasts; 1-2 rows × 8 vectors. A
 * reduction step of the 6 × 4 block: 24 FMAs in 42 instructions. */
#define FA_ROWS_ROWS     6
#define FA_ROWS_VECS     4
#define FA_ROWS_FEW_VECS 8
#include "kernels/simd/weighted_rows.h"

/* ---- softcap, ALiBi and bias (kernels/score_mods.h) ---- */
#include "kernels/score_mods.h"

/* ---- the transposed pack (simd/pack.h) and the table (simd/table.h) ---- */
#define FA_ISA_NAME(n) FA_CAT(FA_CAT(fa_, FA_ISA), FA_CAT(n, FA_SFX))
#include "kernels/simd/pack.h"
#undef FA_ISA_NAME
#include "kernels/simd/table.h"

#undef FA_ISA
#undef FA_NQ
#undef FA_NU
#undef FA_TO_BITS
#undef FA_FROM_BITS
#undef FA_EXP2_HIGH
