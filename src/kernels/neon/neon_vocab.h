/* SPDX-License-Identifier: BSD-3-Clause */
/* The NEON vocabulary (kernels/simd/simd.h) and exp2 for one element type: what every file built on
 * the neon template shares. Included by neon_tiles.h (the table's half) and by files that add
 * kernels of their own over the same vocabulary (neon_bf16_softmax.c), after they define what
 * neon_tiles.h lists. */
#include <arm_neon.h>

#define FA_ISA neon

/* ---- the vocabulary: v<op>q_<f32|f64> ---- */
#define FA_NQ(op)             FA_CAT(FA_CAT(op, q_), FA_SFX)
#define FA_NU(op)             FA_CAT(FA_CAT(op, q_), FA_U)
#define FA_TO_BITS(a)         FA_CAT(FA_CAT(vreinterpretq_, FA_U), FA_CAT(_, FA_SFX))(a)
#define FA_FROM_BITS(a)       FA_CAT(FA_CAT(vreinterpretq_, FA_SFX), FA_CAT(_, FA_U))(a)
#define V_LOAD(p)             FA_NQ(vld1)(p)
#define V_LOADU(p)            FA_NQ(vld1)(p)
#define V_STORE(p, v)         FA_NQ(vst1)((p), (v))
#define V_STOREU(p, v)        FA_NQ(vst1)((p), (v))
#define V_SET1(x)             FA_CAT(vdupq_n_, FA_SFX)(x)
#define V_ZERO()              V_SET1((FA_T)0)
#define V_FMA(a, b, c)        FA_NQ(vfma)((c), (a), (b)) /* c + a·b, one rounding */
#define V_ADD(a, b)           FA_NQ(vadd)((a), (b))
#define V_SUB(a, b)           FA_NQ(vsub)((a), (b))
#define V_MUL(a, b)           FA_NQ(vmul)((a), (b))
#define V_DIV(a, b)           FA_NQ(vdiv)((a), (b))
#define V_MAX(a, b)           FA_NQ(vmax)((a), (b)) /* FMAX: NaN wins */
#define V_MIN(a, b)           FA_NQ(vmin)((a), (b))
#define V_AND(a, b)           FA_FROM_BITS(FA_NU(vand)(FA_TO_BITS(a), FA_TO_BITS(b)))
#define V_OR(a, b)            FA_FROM_BITS(FA_NU(vorr)(FA_TO_BITS(a), FA_TO_BITS(b)))
#define V_ANDNOT(a, b)        FA_FROM_BITS(FA_NU(vbic)(FA_TO_BITS(b), FA_TO_BITS(a))) /* ~a & b */
#define V_REDUCE_ADD(v)       FA_NQ(vaddv)(v) /* pairwise, in a fixed order */
#define V_INTERLEAVE_LO(a, b) FA_NQ(vzip1)((a), (b))
#define V_INTERLEAVE_HI(a, b) FA_NQ(vzip2)((a), (b))
#define V_TRANSPOSE(v)        FA_NAME(interleave_transpose_)(v)
/* predicates: all-ones or all-zero lanes. The compares are AVX's by name (simd/simd.h): ORD from
 * FMAX, which is NaN exactly when an operand is; the negated ones invert all bits (as bytes: NEON
 * has no 64-bit NOT) */
#define V_CMP(a, b, op)        FA_CAT(FA_NAME(cmp_), op)((a), (b))
#define V_AND_CMP(m, a, b, op) FA_NU(vand)((m), V_CMP((a), (b), op))
#define V_SELECT(m, a, b)      FA_NQ(vbsl)((m), (b), (a))
#define V_MASK_AND(a, b)       FA_NU(vand)((a), (b))
#define V_MASK_BITS(m)         FA_NAME(mask_bits_)(m)
#define V_LANES_BELOW(n)       FA_NAME(lanes_below_)(n)
/* tails: NEON has no masked memory access, so a tail is its lane count */
typedef int64_t vtail;
#define V_TAIL(n)             ((vtail)(n))
#define V_LOAD_TAIL(p, n)     FA_NAME(load_part_)((p), (n))
#define V_STORE_TAIL(p, n, v) FA_NAME(store_part_)((p), (n), (v))
#define V_LOAD_PART(p, n)     FA_NAME(load_part_)((p), (n))
#define FA_PREFETCH(p, hint)  __builtin_prefetch((const void *)(p), 0, (hint))
#define FA_HINT_L1            3
#define FA_HINT_L2            2

#include "kernels/simd/simd.h"

/* The compares simd/simd.h names (AVX's predicates). */
FA_INLINE vmask FA_CAT(FA_NAME(cmp_), _CMP_ORD_Q)(vec a, vec b)
{
    const vec m = V_MAX(a, b); /* NaN exactly when a or b is */
    return FA_NQ(vceq)(m, m);
}
FA_INLINE vmask FA_CAT(FA_NAME(cmp_), _CMP_NEQ_UQ)(vec a, vec b)
{
    return V_MASK_NOT(FA_NQ(vceq)(a, b));
}
FA_INLINE vmask FA_CAT(FA_NAME(cmp_), _CMP_LT_OQ)(vec a, vec b)
{
    return FA_NQ(vclt)(a, b);
}
FA_INLINE vmask FA_CAT(FA_NAME(cmp_), _CMP_NLT_UQ)(vec a, vec b)
{
    return V_MASK_NOT(FA_NQ(vclt)(a, b));
}

/* Lane i's predicate in bit i: each lane's weight 2^i, summed. */
FA_INLINE unsigned FA_NAME(mask_bits_)(vmask m)
{
    return (unsigned)FA_NU(vaddv)(FA_NU(vand)(m, FA_NU(vld1)(FA_NAME(lane_weights_))));
}

/* Lanes [0, n) as a predicate, n any. */
FA_INLINE vmask FA_NAME(lanes_below_)(int64_t n)
{
    const vmask lanes = FA_NU(vld1)(FA_NAME(lane_index_));
    return FA_NU(vcgt)(FA_CAT(vdupq_n_, FA_U)((FA_UINT)(n <= 0 ? 0 : n >= FA_LANES ? FA_LANES : n)), lanes);
}

/* Lanes [0, n) of p, the others 0, n in [0, FA_LANES] (a whole vector for n >= FA_LANES); nothing past
 * p + n is read: lane by lane. */
FA_INLINE vec FA_NAME(load_part_)(const FA_T *p, int64_t n)
{
    if (n >= FA_LANES) return V_LOADU(p);
    _Alignas(16) FA_T lanes[FA_LANES] = {0};
    for (int64_t i = 0; i < n; i++) lanes[i] = p[i];
    return V_LOAD(lanes);
}

FA_INLINE void FA_NAME(store_part_)(FA_T *p, int64_t n, vec v)
{
    if (n >= FA_LANES) {
        V_STOREU(p, v);
        return;
    }
    _Alignas(16) FA_T lanes[FA_LANES];
    V_STORE(lanes, v);
    for (int64_t i = 0; i < n; i++) p[i] = lanes[i];
}

/* exp2(x), branch-free, as avx2's but for the split: x is clamped to [FA_EXP2_LOW, FA_EXP2_HIGH]
 * (FMAX and FMIN keep NaN, so NaN passes through both), split at n = floor(x) (FRINTM; f32, with the
 * minimax polynomial on [0, 1) of exp2_poly.h, one FMA less than Taylor's on |f| <= 1/2) or at the
 * nearest integer (FRINTN; f64, Taylor's 13 terms), and 2^n is built in the exponent field from the
 * integer n (n = LOW: field 1, the smallest normal; n = HIGH: the all-ones field, +inf). Flushed lanes
 * (x < LOW) have their 2^n masked to +0, so no lane computes a subnormal; the clamp keeps -inf out
 * of the polynomial, so no lane computes -inf - -inf either. Edges (simd/simd.h): exp2(-inf) = +0,
 * exp2(0) = 1, NaN stays NaN (its 2^n is that of n = 0). f32 per vector, from the object code: 1
 * compare, 2 clamps, 1 round, 1 subtract, 1 conversion, 1 add and 1 shift (2^n), 1 BIC (the NOT and
 * the AND), 6 FMAs and 1 multiply: 15 instructions, and 6 register moves, since FMLA overwrites its
 * addend, a constant here (AVX2's: 16 with 7 FMAs; SVE's, with FSCALE: 12). src/README.md,
 * "aarch64", has the whole budget. */
#define FA_EXP2_HIGH ((FA_T)(sizeof(FA_T) == 4 ? FLT_MAX_EXP : DBL_MAX_EXP))
FA_INLINE vec FA_NAME(exp2_)(vec x)
{
    vmask keep = V_CMP(x, V_SET1(FA_EXP2_LOW), _CMP_NLT_UQ);
    x = V_MIN(V_SET1(FA_EXP2_HIGH), V_MAX(V_SET1(FA_EXP2_LOW), x));
#if FA_EXP2_FLOOR
    vec n = FA_NQ(vrndm)(x);
#else
    vec n = FA_NQ(vrndn)(x);
#endif
    vec f = V_SUB(x, n);
    return V_MUL(FA_NAME(exp2_poly_)(f), V_AND(FA_FROM_BITS(keep), V_POW2_OF_INTEGER(n)));
}
