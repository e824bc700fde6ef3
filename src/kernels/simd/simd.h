/* SPDX-License-Identifier: BSD-3-Clause */
/* The SIMD vocabulary the SIMD tables share (avx2, avx512; neon, sve on aarch64), and its first users:
 * the exp2 framework.
 *
 * Each ISA's template (avx2/avx2_tiles.h, avx512/avx512_tiles.h, neon/neon_tiles.h,
 * sve/sve_tiles.h) is included by its *_f32.c and
 * *_f64.c, defines the vocabulary below for that element type, includes this header, defines
 * FA_NAME(exp2_) (the one piece that really differs: how 2^n is built), and then the shared kernels:
 * kernels/tile_scores.h (S = Q·Kᵀ), simd/softmax.h (online softmax, probabilities, score gradient),
 * simd/weighted_rows.h (accumulate, accumulate_t), kernels/score_mods.h (softcap, ALiBi, bias) and
 * simd/table.h (the table's half and the tests' entry points). The code is written once against
 * these names; each ISA's own files say only what its instructions are.
 *
 * Vocabulary (V_* are per lane unless said):
 *   FA_T, FA_SFX (f32/f64), FA_ISA (avx2/avx512/neon/sve...: names fa_<isa>_kernels_<sfx> and the
 *     tests' entry points), FA_LANES (elements per vector, at most FA_LINE), vec, and on x86
 *     FA_MM_PREFIX (_mm256_/_mm512_) and FA_PS (ps/pd),
 *     from which this header names V_LOAD/V_STORE (64-byte aligned), V_LOADU/V_STOREU, V_SET1,
 *     V_ZERO, V_FMA(a, b, c) = a·b + c, V_ADD, V_SUB, V_MUL, V_DIV and V_MAX (x86: returns its
 *     second operand when either is NaN; neon and sve: NaN wins. The shared kernels depend on
 *     neither: the softmax tracks NaN with its own compares); an ISA without FA_MM_PREFIX defines
 *     those itself; the ISA adds V_AND, V_OR, V_ANDNOT (~a & b, bitwise),
 *     V_REDUCE_ADD (a fixed order);
 *   vmask, a lane predicate (AVX-512: a __mmask; AVX2 and NEON: a vector of all-ones or all-zero
 *     lanes; SVE: an svbool_t): V_CMP(a, b, op) -> vmask (op one of _CMP_ORD_Q, _CMP_NEQ_UQ,
 *     _CMP_LT_OQ, _CMP_NLT_UQ: AVX's predicates, by name on every ISA), V_AND_CMP(m, a, b, op) =
 *     m & V_CMP(a, b, op) (AVX-512: one masked compare), V_SELECT(m, a, b) = m ? b : a, V_MASK_AND(m1,
 * m2), V_MASK_BITS(m) = lane i's predicate in bit i
 *     (AVX2: movemask), V_LANES_BELOW(n) = lanes [0, n) as a vmask (n any);
 *   vtail, a mask for loads and stores of lanes [0, n) that touch nothing past them (AVX-512: the
 *     same __mmask; AVX2: an integer vector for vmaskmov; SVE: a predicate; NEON, which has no masked
 *     memory access: the count itself): V_TAIL(n) for n in [0, FA_LANES],
 *     V_LOAD_TAIL(p, t) (other lanes 0), V_STORE_TAIL(p, t, v), V_LOAD_PART(p, n) for n >= 1;
 *   V_TRANSPOSE(v) for vec v[FA_LANES]; FA_TANH_VECTOR (score_mods.h);
 *   FA_PREFETCH(p, hint) with FA_HINT_L1 or FA_HINT_L2 (x86: _mm_prefetch with _MM_HINT_T0, T1, named
 *     below; others define the three themselves);
 *   FA_EXP2_COEF: the coefficients (kernels/exp2_poly.h) of the polynomial this type's exp2 uses;
 *   FA_MAX_CHAINS: independent max chains per vector in the softmax's first pass (even);
 *   register blocks: FA_SCORES_KEYS × FA_SCORES_VECS (tile_scores.h), FA_FEW_ROWS_KEYS(rows)
 *     (few_rows_scores.h), FA_ROWS_ROWS × FA_ROWS_VECS and FA_ROWS_FEW_VECS (weighted_rows.h):
 *     per ISA, since AVX2 has 16 vector registers and AVX-512 32.
 * Layouts are those of kernels/kernels.h: score tiles transposed (a vector = FA_LANES query rows), ld
 * and accumulator rows a multiple of the 64-byte line, FA_LINE elements = FA_LINE_VECS vectors
 * (avx512 and 512-bit sve: 1, avx2 and 256-bit sve: 2, neon and 128-bit sve: 4). */

#include <float.h>

#include "template.h"
#define FA_INLINE static inline __attribute__((always_inline))
/* Before each loop over a register block's rows or vectors (trip counts that are compile-time
 * constants in every instantiation): unrolled completely, its accumulators live in registers. gcc
 * -O2 (CI's and RelWithDebInfo's level) unrolls only loops that do not grow, and otherwise kept the
 * block in a stack array: a load and a store around every FMA, Q·Kᵀ 3.1x and P·V 3.4x slower per
 * tile on Zen 4. */
#define FA_UNROLL _Pragma("GCC unroll 16")

#ifdef FA_MM_PREFIX
/* The operations whose intrinsics are named alike on both x86 ISAs: FA_MM(op) is
 * <FA_MM_PREFIX><op>_<FA_PS>, e.g. _mm512_fmadd_ps or _mm256_max_pd. */
#define FA_MM3(pre, op, t)   pre##op##_##t
#define FA_MM2(pre, op, t)   FA_MM3(pre, op, t)
#define FA_MM(op)            FA_MM2(FA_MM_PREFIX, op, FA_PS)
#define V_LOAD(p)            FA_MM(load)(p)
#define V_LOADU(p)           FA_MM(loadu)(p)
#define V_STORE(p, v)        FA_MM(store)((p), (v))
#define V_STOREU(p, v)       FA_MM(storeu)((p), (v))
#define V_SET1(x)            FA_MM(set1)(x)
#define V_ZERO()             FA_MM(setzero)()
#define V_FMA(a, b, c)       FA_MM(fmadd)((a), (b), (c))
#define V_ADD(a, b)          FA_MM(add)((a), (b))
#define V_SUB(a, b)          FA_MM(sub)((a), (b))
#define V_MUL(a, b)          FA_MM(mul)((a), (b))
#define V_DIV(a, b)          FA_MM(div)((a), (b))
#define V_MAX(a, b)          FA_MM(max)((a), (b))
#define FA_PREFETCH(p, hint) _mm_prefetch((const char *)(p), (hint))
#define FA_HINT_L1           _MM_HINT_T0
#define FA_HINT_L2           _MM_HINT_T1
#endif
_Static_assert(FA_LANES >= 1 && 64 / (int)sizeof(FA_T) % FA_LANES == 0, "a vector divides a 64-byte line");

/* Elements in 64 bytes (FA_PAD_ELEMS_F32 / FA_PAD_ELEMS_F64 of kernels.h), and vectors in them. */
#define FA_LINE      (64 / (int)sizeof(FA_T))
#define FA_LINE_VECS (FA_LINE / FA_LANES)

/* Bits [0, n) of a line's row predicate (n may be <= 0 or >= FA_LINE). */
FA_INLINE unsigned FA_NAME(line_bits_)(int64_t n)
{
    if (n <= 0) return 0;
    return n >= FA_LINE ? (unsigned)((1ull << FA_LINE) - 1) : (1u << n) - 1;
}

#ifdef V_INTERLEAVE_LO
/* V_TRANSPOSE from two shuffles, for an ISA that has them at every width (neon, sve):
 * V_INTERLEAVE_LO(a, b) = a0 b0 a1 b1 ... (the lower halves' lanes alternated), V_INTERLEAVE_HI the
 * same of the upper halves. log2(FA_LANES) rounds of w[2i] = lo(v[i], v[i + L/2]), w[2i + 1] =
 * hi(v[i], v[i + L/2]) transpose an L × L block (the perfect shuffle): L·log2(L) shuffles, 2 a vector
 * for NEON's 4 × 4 floats, 4 for 512-bit SVE's 16 × 16. */
FA_INLINE void FA_NAME(interleave_transpose_)(vec v[FA_LANES])
{
    const int rounds = FA_LANES >= 16 ? 4 : FA_LANES >= 8 ? 3 : FA_LANES >= 4 ? 2 : 1;
    FA_UNROLL
    for (int round = 0; round < rounds; round++) {
        vec w[FA_LANES];
        FA_UNROLL
        for (int i = 0; i < FA_LANES / 2; i++) {
            w[2 * i] = V_INTERLEAVE_LO(v[i], v[i + FA_LANES / 2]);
            w[2 * i + 1] = V_INTERLEAVE_HI(v[i], v[i + FA_LANES / 2]);
        }
        FA_UNROLL
        for (int i = 0; i < FA_LANES; i++) v[i] = w[i];
    }
}
#endif

/* ---- exp2: the framework ----
 * Every table's exp2 has the same contract: exp2(-inf) = +0 exactly (a masked score), exp2(0) = 1
 * exactly (the row maximum), NaN stays NaN, and results below the smallest normal are flushed: every
 * x below log2 of it (-126 or -1022) gives exactly +0, every x at or above it a normal number. On
 * Intel cores every FMA that reads a subnormal costs about 30x (q, k, v from U(-10, 10) made an f32
 * forward 15x slower on a Xeon), and next to the row's largest term (1) such a probability is below
 * the sum's rounding anyway. Flushing in exp2 rather than setting FTZ/DAZ in MXCSR leaves the
 * caller's subnormal inputs to IEEE arithmetic, needs no save and restore around the team's work,
 * and gives the same bits on every thread whatever MXCSR it runs with. Accuracy per type is that of
 * the polynomial and split each ISA documents (tests/test_exp2.c checks it).
 *
 * Every exp2 splits x = n + f, takes 2^f from the polynomial below and applies 2^n exactly; how it
 * splits and builds 2^n is the ISA's (FA_NAME(exp2_), defined by the template after this header). */
FA_INLINE vec FA_NAME(exp2_)(vec x);

/* log2 of the smallest normal (-126, -1022): exp2 below it is flushed to +0. */
#define FA_EXP2_LOW    ((FA_T)(sizeof(FA_T) == 4 ? FLT_MIN_EXP - 1 : DBL_MIN_EXP - 1))
#define FA_EXP2_DEGREE ((int)(sizeof FA_EXP2_COEF / sizeof FA_EXP2_COEF[0]) - 1)

/* 2^f: the polynomial of kernels/exp2_poly.h, Horner from the top. f·p, not p·f (the same bits):
 * with f from a zero-masked operation gcc 12 otherwise copies p between registers at every step. */
FA_INLINE vec FA_NAME(exp2_poly_)(vec f)
{
    vec p = V_SET1(FA_EXP2_COEF[FA_EXP2_DEGREE]);
    for (int i = FA_EXP2_DEGREE - 1; i >= 0; i--) p = V_FMA(f, p, V_SET1(FA_EXP2_COEF[i]));
    return p;
}

/* exp(d) for d = s - m <= 0 (a max already subtracted), as exp2(d·log2 e). */
FA_INLINE vec FA_NAME(exp_of_difference_)(vec d)
{
    return FA_NAME(exp2_)(V_MUL(d, V_SET1((FA_T)1.44269504088896340735992468100189214)));
}
