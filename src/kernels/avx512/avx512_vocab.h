/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX-512 vocabulary (kernels/simd/simd.h) and exp2 for one element type: what every file built
 * on the avx512 template shares. Included by avx512_tiles.h (the table's half) and by files that
 * add kernels of their own over the same vocabulary (kernels/amx/amx_softmax.c), after they define
 *   FA_T, FA_SFX, FA_PS (ps or pd: the intrinsics' suffix), FA_LANES, vec, mask (__mmask16 or
 *   __mmask8), FA_EXP2_COEF (the polynomial of kernels/exp2_poly.h) and FA_EXP2_FLOOR (1: exp2
 *   splits x at floor(x), with AVX512DQ's vreduce; 0: at the nearest integer).
 * The includer undefines what the template's end (simd/table.h) would: avx512_vocab_end.h. */
#define FA_ISA avx512

/* ---- the vocabulary: _mm512_<op>_<ps|pd> (simd/simd.h names the common ones) ---- */
#define FA_MM_PREFIX     _mm512_
#define FA_TO_BITS3(t)   _mm512_cast##t##_si512
#define FA_TO_BITS2(t)   FA_TO_BITS3(t)
#define FA_FROM_BITS3(t) _mm512_castsi512_##t
#define FA_FROM_BITS2(t) FA_FROM_BITS3(t)
#define V_REDUCE_ADD(a)  FA_MM(reduce_add)(a)
/* bitwise, on the integer view (AVX-512F has no float and/or; the bits are the same for both types) */
#define V_BITS(op, a, b) FA_FROM_BITS2(FA_PS)(op(FA_TO_BITS2(FA_PS)(a), FA_TO_BITS2(FA_PS)(b)))
#define V_AND(a, b)      V_BITS(_mm512_and_epi32, (a), (b))
#define V_OR(a, b)       V_BITS(_mm512_or_epi32, (a), (b))
#define V_ANDNOT(a, b)   V_BITS(_mm512_andnot_epi32, (a), (b)) /* ~a & b */
/* predicates and tails are both k registers */
typedef mask vmask;
typedef mask vtail;
#define V_CMP(a, b, op)        FA_CAT(FA_MM(cmp), _mask)((a), (b), (op))
#define V_AND_CMP(m, a, b, op) FA_CAT(FA_MM(mask_cmp), _mask)((m), (a), (b), (op))
#define V_SELECT(m, a, b)      FA_MM(mask_blend)((m), (a), (b))
#define V_MASK_BITS(m)         ((unsigned)(m))
#define V_MASK_AND(a, b)       ((vmask)((a) & (b)))
#define V_TAIL(n)              FA_NAME(tail_mask_)(n)
#define V_LANES_BELOW(n)       FA_NAME(tail_mask_)(n)
#define V_LOAD_TAIL(p, m)      FA_MM(maskz_loadu)((m), (p))
#define V_STORE_TAIL(p, m, v)  FA_MM(mask_storeu)((p), (m), (v))
#define V_LOAD_PART(p, n)      V_LOAD_TAIL((p), FA_NAME(tail_mask_)(n))

#include "kernels/simd/simd.h"

/* Lanes [0, n) of a vector; n may be <= 0 (no lane) or >= FA_LANES (every lane). */
FA_INLINE mask FA_NAME(tail_mask_)(int64_t n)
{
    if (n <= 0) return 0;
    if (n >= FA_LANES) return (mask)((1u << FA_LANES) - 1u);
    return (mask)((1u << (unsigned)n) - 1u);
}

#if FA_EXP2_FLOOR
/* exp2(x), branch-free, in 4 instructions besides the polynomial's 6 FMAs: f = x - floor(x) in
 * [0, 1] (vreduceps, round down; exact but where f rounds up to 1, which p takes as well), 2^f from
 * the minimax polynomial (kernels/exp2_poly.h), and scalef(p, x) = p·2^floor(x) (scalef floors its
 * second operand itself, so n is never formed). -inf gives exactly +0 (scalef by -inf), 0 exactly 1
 * (f = 0, p(0) = 1), NaN stays NaN (reduce and scalef propagate it), and every x below FA_EXP2_LOW
 * exactly +0 (simd/simd.h): its compare zero-masks scalef, which EVEX encodes for free, so no lane
 * computes a subnormal (p >= 1, so x >= FA_EXP2_LOW gives at least the smallest normal). No clamp
 * and no vrndscaleps (two FMA-port slots on Intel): per vector, on the FMA ports of an Intel server
 * core, 1 compare + 1 reduce + 6 FMAs + 1 scalef = 9 slots, against 1 + 2 + 1 + 7 + 1 = 12 for the
 * round-to-nearest split below. reduce(+-inf) is +0 and raises nothing, so it needs no mask. */
FA_INLINE vec FA_NAME(exp2_)(vec x)
{
    mask keep = V_CMP(x, V_SET1(FA_EXP2_LOW), _CMP_NLT_UQ);
    vec f = FA_MM(reduce)(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    return FA_MM(maskz_scalef)(keep, FA_NAME(exp2_poly_)(f), x);
}
#else
/* exp2(x), branch-free: x = n + f with n the nearest integer and |f| <= 1/2, 2^f from the
 * polynomial and 2^n applied exactly by scalef. -inf gives exactly 0, 0 exactly 1, NaN stays NaN,
 * and every x below FA_EXP2_LOW exactly +0 (simd/simd.h). double keeps this split: the floor split
 * above would need a longer polynomial on [0, 1) than Taylor's 13 terms on |f| <= 1/2, and f64
 * speed is no target.
 *
 * The flush costs nothing on the FMA ports: the compare that decides it replaces the clamp that
 * would keep -inf out of the polynomial, and its mask zero-masks the rounding, the subtraction and
 * scalef, which EVEX encodes for free. Flushed lanes then see n = f = 0, so none computes a NaN or a
 * subnormal. The compare is true for NaN, so NaN passes. (On Zen 4 the masked rounding and
 * subtraction make this loop about 5% slower than unmasked ones, under 0.1% of a D = 128 forward;
 * unmasked, a -inf lane would compute -inf - -inf, raising FE_INVALID, and the masked lanes of
 * scalef would underflow.) */
FA_INLINE vec FA_NAME(exp2_)(vec x)
{
    mask keep = V_CMP(x, V_SET1(FA_EXP2_LOW), _CMP_NLT_UQ);
    vec n = FA_MM(maskz_roundscale)(keep, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vec f = FA_MM(maskz_sub)(keep, x, n);
    return FA_MM(maskz_scalef)(keep, FA_NAME(exp2_poly_)(f), n);
}
#endif
