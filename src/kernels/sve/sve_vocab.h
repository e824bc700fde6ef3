/* SPDX-License-Identifier: BSD-3-Clause */
/* The SVE vocabulary (kernels/simd/simd.h) for one element type and one register length, and its
 * exp2: what the sve table's kernels (sve_tiles.h) and the sve_bf16 set's softmax (sve_bf16.h) are
 * written on. Included by sve_f32.h or sve_f64.h, which define first what differs by type:
 *   FA_SVE_BITS (128 to 2048: the file is compiled with -msve-vector-bits=FA_SVE_BITS), FA_T, FA_SFX,
 *   FA_BITS_OF_T, vec and vmask (SVE's types fixed at that length), FA_LANES, FA_PTRUE (the lanes the
 *   kernels use), FA_WHILELT(n) (lanes [0, n) of them), V_POW2_SCALE(keep, p, n) (p·2^n, FSCALE, zero where
 *   keep is not), V_ROUND_SPLIT(keep, x) (floor or nearest), FA_TANH_VECTOR, FA_EXP2_COEF,
 *   V_LOAD_STORED (float).
 *
 * FA_LANES, the lanes of a vector, are the register's up to 512 bits, and 512 bits' at 1024 and 2048:
 * the layouts of kernels.h pad score tiles, statistics and accumulators to 64-byte lines (16 floats),
 * which a vector must divide (simd/simd.h), so a 1024-bit vector would span two key columns of a
 * 16-row tile. There the kernels use the low 512 bits of each register (FA_PTRUE is the first 16 or
 * 8 lanes, FA_WHILELT never reaches past them), which is what the code compiled for 512 bits
 * computes, at the addressing of the longer register (sve_tiles.h says why that needs its own
 * instantiation).
 *
 * Every other name is the x86 vocabulary's, on SVE instructions: loads and stores of tails are
 * predicated (svwhilelt: nothing past them is touched, no fault in inactive lanes), predicates are
 * svbool_t, V_MASK_BITS sums lane weights (no movemask), exp2 applies 2^n with FSCALE (as AVX-512's
 * scalef) and flushes with zeroing predication, so no lane computes a subnormal or -inf - -inf. */
#include <arm_sve.h>

#define FA_SVE_WIDE (FA_SVE_BITS > 512) /* the register is longer than the vector */

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
#if FA_SVE_WIDE /* the vector's upper half, lanes [FA_LANES/2, FA_LANES), brought down by EXT */
#define V_INTERLEAVE_HI(a, b) ((vec)svzip1(svext((a), (a), FA_LANES / 2), svext((b), (b), FA_LANES / 2)))
#else
#define V_INTERLEAVE_HI(a, b) ((vec)svzip2((a), (b)))
#endif
#define V_TRANSPOSE(v) FA_NAME(interleave_transpose_)(v)
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
