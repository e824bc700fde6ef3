/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX2+FMA table's half for one element type: its vocabulary (kernels/simd/simd.h) and exp2,
 * then the shared kernels. Included by avx2_f32.c and avx2_f64.c, which define first what differs
 * between the two types:
 *   FA_T, FA_SFX, FA_PS (ps or pd: the intrinsics' suffix), FA_LANES (of a 256-bit vector), vec,
 *   V_TAIL(n) (a lane mask for vmaskmov), V_REDUCE_ADD, V_TRANSPOSE, FA_TANH_VECTOR,
 *   FA_EXP2_SHIFT and V_POW2_OF_SHIFTED(t) (n = round(x) and 2^n from t = x + FA_EXP2_SHIFT),
 *   FA_EXP2_COEF (the polynomial of kernels/exp2_poly.h).
 *
 * A 64-byte line is two vectors (FA_LINE_VECS = 2). AVX2 has 16 vector registers (AVX-512: 32), so
 * the register blocks are smaller than avx512's. */
#define FA_ISA avx2

/* ---- the vocabulary: _mm256_<op>_<ps|pd> (simd/simd.h names the common ones) ---- */
#define FA_MM_PREFIX     _mm256_
#define FA_FROM_BITS3(t) _mm256_castsi256_##t
#define FA_FROM_BITS2(t) FA_FROM_BITS3(t)
#define V_MIN(a, b)      FA_MM(min)((a), (b))
#define V_AND(a, b)      FA_MM (and)((a), (b))
#define V_OR(a, b)       FA_MM(or)((a), (b))
#define V_ANDNOT(a, b)   FA_MM(andnot)((a), (b)) /* ~a & b */
/* AVX2 compares give a vector of all-ones or all-zero lanes; tails are integer vectors for vmaskmov */
typedef vec vmask;
typedef __m256i vtail;
#define V_CMP(a, b, op)        FA_MM(cmp)((a), (b), (op))
#define V_AND_CMP(m, a, b, op) V_AND((m), V_CMP((a), (b), (op)))
#define V_SELECT(m, a, b)      FA_MM(blendv)((a), (b), (m))
#define V_MASK_BITS(m)         FA_MM(movemask)(m)
#define V_MASK_AND(a, b)       V_AND((a), (b))
#define V_LOAD_TAIL(p, m)      FA_MM(maskload)((p), (m))
#define V_STORE_TAIL(p, m, v)  FA_MM(maskstore)((p), (m), (v))
#define V_LOAD_PART(p, n)      FA_NAME(load_part_)((p), (n))
#define V_LANES_BELOW(n)       FA_NAME(lanes_below_)(n)

#include "kernels/simd/simd.h"

/* Lanes [0, n) for n >= 1: whole vectors are plain loads. */
FA_INLINE vec FA_NAME(load_part_)(const FA_T *p, int64_t n)
{
    return n >= FA_LANES ? V_LOADU(p) : V_LOAD_TAIL(p, V_TAIL(n));
}

/* Lanes [0, n) as a predicate, n any. */
FA_INLINE vec FA_NAME(lanes_below_)(int64_t n)
{
    return FA_FROM_BITS2(FA_PS)(V_TAIL(n <= 0 ? 0 : n >= FA_LANES ? FA_LANES : n));
}

/* exp2(x), branch-free. AVX2 has neither scalef nor a double -> int64 conversion, so 2^n is built
 * in the exponent field: x is clamped to [FA_EXP2_LOW, FA_EXP2_HIGH] (V_MAX and V_MIN return their
 * second operand when either is NaN, so NaN passes through both and stays NaN), x = n + f with n
 * the nearest integer (found by adding FA_EXP2_SHIFT) and |f| <= 1/2, 2^f from the polynomial,
 * times 2^n. Edges (simd/simd.h): exp2(-inf) = 0 exactly, exp2(0) = 1 exactly, exp2(+inf) = +inf;
 * x > HIGH - 1/2 gives +inf a little early (the kernels' arguments are <= 0).
 *
 * The flushed lanes' 2^n (2^LOW after the clamp) is masked to +0 before the product, so no lane
 * ever computes a subnormal, and the clamp keeps -inf out of the polynomial. That costs one compare
 * (true for NaN, so NaN passes); the callers pay for it by dropping their mask of the rows that saw
 * no key (they subtract +inf there, and exp2 flushes the -inf that leaves). */
/* n = FA_EXP2_HIGH (128, 1024) is the one n whose biased exponent is all ones (+inf). */
#define FA_EXP2_HIGH ((FA_T)(sizeof(FA_T) == 4 ? FLT_MAX_EXP : DBL_MAX_EXP))
FA_INLINE vec FA_NAME(exp2_)(vec x)
{
    vec keep = V_CMP(x, V_SET1(FA_EXP2_LOW), _CMP_NLT_UQ);
    x = V_MIN(V_SET1(FA_EXP2_HIGH), V_MAX(V_SET1(FA_EXP2_LOW), x));
    vec t = V_ADD(x, V_SET1(FA_EXP2_SHIFT));
    vec n = V_SUB(t, V_SET1(FA_EXP2_SHIFT));
    vec f = V_SUB(x, n);
    return V_MUL(FA_NAME(exp2_poly_)(f), V_AND(keep, V_POW2_OF_SHIFTED(t)));
}

/* ---- S = Q·Kᵀ, transposed (kernels/tile_scores.h) ----
 * A 6 × 2 block: 12 accumulators + 2 query vectors + 1 broadcast of the 16 registers. 6 × 2
 * measured at or above 4 × 3, 3 × 4, 4 × 2 and the mixes of them, for f32 and f64 at d = 64 and 128;
 * with 2 vectors (one 64-byte line) the row axis of a score tile (ld) never leaves a remainder.
 * Tiles of at most 4 rows: 8 keys a block for one row, 4 for two, 2 for three or four (at most 8
 * accumulators + 4 query vectors + 1 key vector). */
#define FA_SCORES_KEYS         6
#define FA_SCORES_VECS         2
#define FA_FEW_ROWS_KEYS(rows) ((rows) == 1 ? 8 : (rows) == 2 ? 4 : 2)
#include "kernels/tile_scores.h"

/* ---- softmax, probabilities, score gradient (simd/softmax.h) ----
 * Two max chains per vector of a line (a line is two vectors here: four chains in all, as avx512 has). */
#define FA_MAX_CHAINS 2
#include "kernels/simd/softmax.h"

/* ---- accumulate, accumulate_t (simd/weighted_rows.h) ----
 * 6 rows × 2 vectors: 12 accumulators + 2 x vectors + 1 broadcast, for any number of rows (d = 64
 * or 128 leaves no remainder). */
#define FA_ROWS_ROWS     6
#define FA_ROWS_VECS     2
#define FA_ROWS_FEW_VECS 2
#include "kernels/simd/weighted_rows.h"

/* ---- softcap, ALiBi and bias (kernels/score_mods.h) ---- */
#include "kernels/score_mods.h"

/* the transposed pack, vectorised in its own file (avx2_pack.c) */
#include "kernels/avx2/avx2_pack.h"
#include "kernels/simd/table.h"

#undef FA_ISA
#undef FA_MM_PREFIX
#undef FA_FROM_BITS3
#undef FA_FROM_BITS2
