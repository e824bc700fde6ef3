/* SPDX-License-Identifier: BSD-3-Clause */
/* The SVE table's half for one element type and one register length: the shared kernels on the SVE
 * vocabulary (sve_vocab.h, through sve_f32.h or sve_f64.h, which sve_<type>_<bits>.c includes first).
 *
 * Vector-length agnostic SVE against a fixed-lanes vocabulary. The shared kernels hold register
 * blocks in arrays of vectors (vec acc[6][4], unrolled into registers) and size lines, chains and
 * switches by FA_LANES at compile time; C forbids arrays, struct members and sizeof of SVE's sizeless
 * types (svfloat32_t), so VLA code cannot be written on the vocabulary at all. The types fixed at one
 * length by -msve-vector-bits (arm_sve_vector_bits) are ordinary types, so each length is an
 * instantiation of its own: 128 bits (Neoverse V2: Grace, Graviton 4; N2), 256 (Neoverse V1:
 * Graviton 3), 512 (A64FX), and 1024 and 2048, which the architecture allows and no CPU ships (there
 * the vectors are 512 bits of the register: sve_vocab.h says why). The table is chosen once per
 * context, from the calling thread's vector length (prctl PR_SVE_GET_VL: runtime/dispatch.c), and
 * each instantiation requires exactly its length (FA_CPU_SVE_VL*): code compiled for one length is
 * wrong at another (its addressing steps by the compiled length: `mul vl`). At a length none is
 * compiled for (one that is not a power of two, which SVE's first version allowed) the sve table does not
 * run and the automatic choice takes neon, which is correct at every length.
 *
 * What is not shared with the x86 tables: the ISA's own files (this one, the vocabulary, the exp2
 * split), nothing in the kernels: simd/, tile_scores.h, few_rows_scores.h, score_mods.h and
 * exp2_poly.h's polynomials are theirs. The transposed pack is simd/pack.h (shared with neon), the
 * widening neon's. */

/* ---- S = Q·Kᵀ, transposed (kernels/tile_scores.h) ----
 * A 6 × 4 block, as avx512's: 24 accumulators + 4 query vectors + 1 broadcast (LD1R) of the 32
 * registers. Tiles of at most 4 rows: 8 keys a block for 1-3 rows, 6 for 4. The budget (gcc 12 -O2,
 * object code, every length): a dim step is 43 instructions, 24 FMAs, 4 loads and 6 broadcasts
 * (the load pipes), 9 integer: 1.79 instructions per FMA. */
#define FA_SCORES_KEYS         6
#define FA_SCORES_VECS         4
#define FA_FEW_ROWS_KEYS(rows) ((rows) <= 3 ? 8 : 6)
#include "kernels/tile_scores.h"

/* ---- softmax, probabilities, score gradient (simd/softmax.h) ----
 * Four max chains for a line of one 512-bit vector, two a vector where a line is 2 or 4 of them.
 * The budget per 16 scores, both passes (src/README.md, "aarch64"): 512 bits 30.5 instructions of
 * which 15.5 on the FP pipes, 256 bits 56.5 (31), 128 bits 106.5 (62). */
#define FA_MAX_CHAINS (FA_LINE_VECS >= 2 ? 2 : 4)
#include "kernels/simd/softmax.h"

/* ---- accumulate, accumulate_t (simd/weighted_rows.h) ----
 * 6 rows × 4 vectors: 24 accumulators + 4 x vectors + 1-2 broadcasts; 1-2 rows × 8 vectors. A
 * reduction step of the 6 × 4 block: 24 FMAs in 43 (128 bits), 45 (256) or 48 (512) instructions. */
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
#undef FA_PT
#undef FA_BITS
#undef FA_FLOAT
