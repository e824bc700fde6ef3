/* SPDX-License-Identifier: BSD-3-Clause */
/* The SVE table's half for one element type and one vector length: its vocabulary
 * (kernels/simd/simd.h) and exp2, then the shared kernels. Included through sve_f32.h or sve_f64.h by
 * sve_<type>_<bits>.c, which define first what differs:
 *   FA_SVE_BITS (128, 256 or 512: the file is compiled with -msve-vector-bits=FA_SVE_BITS), FA_T,
 *   FA_SFX, FA_LANES, vec and vmask (SVE's types fixed at that length), FA_PTRUE (every lane),
 *   FA_WHILELT(n) (lanes [0, n)), V_POW2_SCALE(keep, p, n) (p·2^n, FSCALE, zero where keep is not),
 *   V_ROUND_SPLIT(keep, x) (floor or nearest), FA_TANH_VECTOR, FA_EXP2_COEF, V_LOAD_STORED (float).
 *
 * Vector-length agnostic SVE against a fixed-lanes vocabulary. The shared kernels hold register
 * blocks in arrays of vectors (vec acc[6][4], unrolled into registers) and size lines, chains and
 * switches by FA_LANES at compile time; C forbids arrays, struct members and sizeof of SVE's sizeless
 * types (svfloat32_t), so VLA code cannot be written on the vocabulary at all. The types fixed at one
 * length by -msve-vector-bits (arm_sve_vector_bits) are ordinary types, so each length the hardware
 * ships is an instantiation of its own: 128 bits (Neoverse V2: Grace, Graviton 4; N2), 256 (Neoverse
 * V1: Graviton 3), 512 (A64FX). The table is chosen once per context, from the calling thread's vector
 * length (prctl PR_SVE_GET_VL: runtime/dispatch.c), and each instantiation requires exactly its length
 * (FA_CPU_SVE_VL*): code compiled for one length is wrong at another (its addressing steps by the
 * compiled length: `mul vl`). At a length no instantiation has (1024 or 2048 bits: no CPU ships
 * them; or a process that set another with prctl) the sve table does not run and the automatic choice
 * takes neon, which is correct at every length: a VLA kernel set with predicates would be the way to
 * use such registers whole (src/README.md, "aarch64", says what is missing).
 *
 * Every other name is the x86 vocabulary's, on SVE instructions: loads and stores of tails are
 * predicated (svwhilelt: nothing past them is touched, no fault in inactive lanes), predicates are
 * svbool_t, V_MASK_BITS sums lane weights (no movemask), exp2 applies 2^n with FSCALE (as AVX-512's
 * scalef) and flushes with zeroing predication, so no lane computes a subnormal or -inf - -inf. What
 * is not shared with the x86 tables: the ISA's own files (this one, the exp2 split), nothing in the
 * kernels: simd/, tile_scores.h, few_rows_scores.h, score_mods.h and exp2_poly.h's polynomials are
 * theirs. The transposed pack is simd/pack.h (shared with neon), the widening neon's. */
#include <arm_sve.h>

#define FA_ISA FA_CAT(sve, FA_SVE_BITS)

/* ---- the vocabulary (arm_sve.h's overloaded intrinsics) ---- */
#define FA_PT                 FA_PTRUE
#define V_LOAD(p)             ((vec)svld1(FA_PT, (p)))
#define V_LOADU(p)            V_LOAD(p)
#define V_STORE(p, v)         svst1(FA_PT, (p), (v))
#define V_STOREU(p, v)        V_STORE((p), (v))
#define V_SET1(x)             ((vec)FA_CAT(svdup_n_, FA_SFX)(x))
#define V_ZERO()              V_SET1((FA_T)0)
#define V_FMA(a, b, c)        ((vec)svmla_x(FA_PT, (c), (a), (b))) /* c + a·b, one rounding */
#define V_ADD(a, b)           ((vec)svadd_x(FA_PT, (a), (b)))
#define V_SUB(a, b)           ((vec)svsub_x(FA_PT, (a), (b)))
#define V_MUL(a, b)           ((vec)svmul_x(FA_PT, (a), (b)))
#define V_DIV(a, b)           ((vec)svdiv_x(FA_PT, (a), (b)))
#define V_MAX(a, b)           ((vec)svmax_x(FA_PT, (a), (b))) /* FMAX: NaN wins */
#define V_MIN(a, b)           ((vec)svmin_x(FA_PT, (a), (b)))
#define FA_BITS(a)            FA_CAT(svreinterpret_u, FA_BITS_OF_T)(a)
#define FA_FLOAT(a)           FA_CAT(svreinterpret_, FA_SFX)(a)
#define V_AND(a, b)           ((vec)FA_FLOAT(svand_x(FA_PT, FA_BITS(a), FA_BITS(b))))
#define V_OR(a, b)            ((vec)FA_FLOAT(svorr_x(FA_PT, FA_BITS(a), FA_BITS(b))))
#define V_ANDNOT(a, b)        ((vec)FA_FLOAT(svbic_x(FA_PT, FA_BITS(b), FA_BITS(a)))) /* ~a & b */
#define V_REDUCE_ADD(v)       svaddv(FA_PT, (v)) /* FADDV: a recursive pairwise order, fixed */
#define V_INTERLEAVE_LO(a, b) ((vec)svzip1((a), (b)))
#define V_INTERLEAVE_HI(a, b) ((vec)svzip2((a), (b)))
#define V_TRANSPOSE(v)        FA_NAME(interleave_transpose_)(v)
/* predicates (svbool_t): the compares are AVX's by name (simd/simd.h) */
#define V_CMP(a, b, op)        FA_CAT(FA_NAME(cmp_), op)((a), (b))
#define V_AND_CMP(m, a, b, op) ((vmask)svand_z(FA_PT, (m), V_CMP((a), (b), op)))
#define V_SELECT(m, a, b)      ((vec)svsel((m), (b), (a)))
#define V_MASK_AND(a, b)       ((vmask)svand_z(FA_PT, (a), (b)))
#define V_MASK_BITS(m)         FA_NAME(mask_bits_)(m)
#define V_LANES_BELOW(n)       ((vmask)FA_WHILELT(n))
/* tails: predicates too; a predicated load reads nothing (and faults nowhere) in inactive lanes */
typedef vmask vtail;
#define V_TAIL(n)             ((vtail)FA_WHILELT(n))
#define V_LOAD_TAIL(p, t)     ((vec)svld1((t), (p)))
#define V_STORE_TAIL(p, t, v) svst1((t), (p), (v))
#define V_LOAD_PART(p, n)     V_LOAD_TAIL((p), V_TAIL(n))
#define FA_PREFETCH(p, hint)  __builtin_prefetch((const void *)(p), 0, (hint))
#define FA_HINT_L1            3
#define FA_HINT_L2            2

#include "kernels/simd/simd.h"

/* The compares simd/simd.h names (AVX's predicates); FCMNE is true for unordered operands. */
FA_INLINE vmask FA_CAT(FA_NAME(cmp_), _CMP_ORD_Q)(vec a, vec b)
{
    return svnot_z(FA_PT, svcmpuo(FA_PT, a, b));
}
FA_INLINE vmask FA_CAT(FA_NAME(cmp_), _CMP_NEQ_UQ)(vec a, vec b)
{
    return svcmpne(FA_PT, a, b);
}
FA_INLINE vmask FA_CAT(FA_NAME(cmp_), _CMP_LT_OQ)(vec a, vec b)
{
    return svcmplt(FA_PT, a, b);
}
FA_INLINE vmask FA_CAT(FA_NAME(cmp_), _CMP_NLT_UQ)(vec a, vec b)
{
    return svnot_z(FA_PT, svcmplt(FA_PT, a, b));
}

/* Lane i's predicate in bit i (at most 16 lanes): 2^i where active, summed. */
FA_INLINE unsigned FA_NAME(mask_bits_)(vmask m)
{
    const FA_CAT(FA_CAT(svuint, FA_BITS_OF_T), _t) one = FA_CAT(svdup_n_u, FA_BITS_OF_T)(1);
    return (unsigned)svaddv(FA_PT, svlsl_z(m, one, FA_CAT(svindex_u, FA_BITS_OF_T)(0, 1)));
}

/* exp2(x), branch-free, as AVX-512's: x = n + f (FA_EXP2_FLOOR: n = floor(x), FRINTM, f in [0, 1) for
 * the minimax polynomial; else the nearest integer, FRINTN, |f| <= 1/2 for Taylor's), 2^f from the
 * polynomial (kernels/exp2_poly.h) and FSCALE(p, n) = p·2^n exactly, with n converted to an integer
 * (saturating: x above the range gives +inf). Every x below FA_EXP2_LOW gives exactly +0
 * (simd/simd.h): its lane is inactive in the rounding, the subtraction, the conversion and the
 * scaling, all zeroing, so no lane computes -inf - -inf or a subnormal; p >= 1 (floor) or n > LOW
 * when f < 0 (nearest), so every active result is normal. NaN compares not-less, stays active and
 * stays NaN. Per vector, from the object code: 1 compare and 1 NOT (on the predicate pipe), 1 round,
 * 1 subtract, 1 conversion, 6 FMAs (f32), 1 FSCALE: 12 instructions and a MOVPRFX before each
 * destructive zeroing one (NEON's 15 and 6 moves, avx512's 9 with vreduceps). src/README.md,
 * "aarch64", has the whole budget. */
FA_INLINE vec FA_NAME(exp2_)(vec x)
{
    const vmask keep = V_CMP(x, V_SET1(FA_EXP2_LOW), _CMP_NLT_UQ);
    const vec n = V_ROUND_SPLIT(keep, x);
    const vec f = (vec)svsub_z(keep, x, n);
    return V_POW2_SCALE(keep, FA_NAME(exp2_poly_)(f), n);
}

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
