/* SPDX-License-Identifier: BSD-3-Clause */
/* The sve_bf16 table's own operations at one register length (kernels.h, "bf16 on dot-product
 * units"), after sve_f32.h's vocabulary; sve_bf16_<bits>.c is compiled for SVE with FEAT_BF16 at
 * that length (sve_tiles.h says why each length is its own). The rest of the set is neon_bf16's:
 * rows_of and pairs_of (BFCVTN, neon/neon_bf16_round.c: a CPU with SVE's BF16 has NEON's) and ref's
 * packs.
 *
 * The dot: C (+)= A·B with SVE's BFDOT, as neon/neon_bf16_dot.c does with NEON's, which says what
 * the instruction computes (round-to-odd sums, subnormals flushed) and why the bound of kernels.h
 * holds. The indexed form takes A's pair from a 128-bit segment, which LD1RQ fills with 4 pairs (8 k)
 * of one row in every segment: per 8 k, 4 such loads and 16 of B feed 64 BFDOTs, 4 rows of C × 4
 * vectors of FA_LANES columns, 16 accumulators of the 32 registers. Each lane sums its pairs in k
 * order, so the products and their order are neon_bf16's, and its bits (both leave FPCR.EBF 0).
 *
 * The softmax: simd/softmax_body.h on the sve table's vocabulary, P rounded by BFCVT into the even
 * halfwords and BFCVTNT into the odd ones, which is the pair layout itself: one store of FA_LANES
 * rows' pair of keys, no interleave (p is never subnormal: exp2 flushes). */
#include "kernels/neon/neon_bf16.h"
#include "kernels/ref/ref.h"

/* bf16 vectors as arrays can hold them: fixed at the register's length, as vec is */
typedef svbfloat16_t vbf16 __attribute__((arm_sve_vector_bits(FA_SVE_BITS)));

/* The halfwords of a vector of FA_LANES floats (1024 and 2048 bits: the low 512 of the register). */
#define FA_PTRUE_B16 (FA_SVE_WIDE ? svptrue_pat_b16(SV_VL32) : svptrue_b16())
#define FA_ROWS      4 /* the dot's register block: FA_ROWS rows of C × 4 vectors */

/* FA_LANES columns' pairs of B at row kk of pairs. */
FA_INLINE vbf16 FA_NAME(pairs_at_)(const uint16_t *b, int64_t kk, int64_t ldb, int v)
{
    return svld1(FA_PTRUE_B16, (const bfloat16_t *)(const void *)(b + kk * 2 * ldb + 2 * FA_LANES * v));
}

/* A's pair (k, k + 1) of a row in every lane (fa_bf16_pair_word). */
FA_INLINE vbf16 FA_NAME(pair_of_)(const uint16_t *row, int64_t k, int64_t K)
{
    return svreinterpret_bf16(svdup_n_u32(fa_bf16_pair_word(row, k, K)));
}

/* The BFDOTs of every row with B's pair j of the chunk (pair j of A's segment: a constant, as the
 * instruction's index must be). */
#define FA_DOT_PAIR(j)                                                                        \
    FA_UNROLL                                                                                 \
    for (int i = 0; i < nm; i++) {                                                            \
        FA_UNROLL                                                                             \
        for (int v = 0; v < nv; v++) acc[i][v] = svbfdot_lane(acc[i][v], bv[j][v], av[i], j); \
    }

FA_INLINE void FA_NAME(dot_block_)(const int nm, const int nv, int64_t K, const uint16_t *a, int64_t lda,
                                   const uint16_t *b, int64_t ldb, float *c, int64_t ldc, float alpha,
                                   int accumulate)
{
    vec acc[FA_ROWS][4];
    FA_UNROLL
    for (int i = 0; i < nm; i++) {
        FA_UNROLL
        for (int v = 0; v < nv; v++) acc[i][v] = accumulate ? V_LOADU(c + i * ldc + FA_LANES * v) : V_ZERO();
    }
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        vbf16 av[FA_ROWS], bv[4][4];
        FA_UNROLL
        for (int i = 0; i < nm; i++)
            av[i] = svld1rq(svptrue_b16(), (const bfloat16_t *)(const void *)(a + i * lda + k));
        FA_UNROLL
        for (int j = 0; j < 4; j++) {
            FA_UNROLL
            for (int v = 0; v < nv; v++) bv[j][v] = FA_NAME(pairs_at_)(b, k / 2 + j, ldb, v);
        }
        FA_DOT_PAIR(0)
        FA_DOT_PAIR(1)
        FA_DOT_PAIR(2)
        FA_DOT_PAIR(3)
    }
    for (; k < K; k += 2) {
        vbf16 bv[4];
        FA_UNROLL
        for (int v = 0; v < nv; v++) bv[v] = FA_NAME(pairs_at_)(b, k / 2, ldb, v);
        FA_UNROLL
        for (int i = 0; i < nm; i++) {
            const vbf16 av = FA_NAME(pair_of_)(a + i * lda, k, K);
            FA_UNROLL
            for (int v = 0; v < nv; v++) acc[i][v] = svbfdot(acc[i][v], bv[v], av);
        }
    }
    FA_UNROLL
    for (int i = 0; i < nm; i++) {
        FA_UNROLL
        for (int v = 0; v < nv; v++)
            V_STOREU(c + i * ldc + FA_LANES * v, accumulate ? acc[i][v] : V_MUL(acc[i][v], V_SET1(alpha)));
    }
}
#undef FA_DOT_PAIR

// clang-format off
#define FA_DOT_CASE(NM, NV)                                                                                  \
    case (NM) * 8 + (NV):                                                                                    \
        FA_NAME(dot_block_)(NM, NV, K, a + m * lda, lda, b + 2 * n, ldb, c + m * ldc + n, ldc, alpha,        \
                            accumulate);                                                                     \
        break;
#define FA_DOT_ROWS(NM) FA_DOT_CASE(NM, 1) FA_DOT_CASE(NM, 2) FA_DOT_CASE(NM, 3) FA_DOT_CASE(NM, 4)
// clang-format on

/* N is a multiple of 16, so of FA_LANES: blocks of 4 vectors, the last of 1-3. */
void FA_CAT(FA_CAT(fa_, FA_ISA), _bf16_dot)(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda,
                                            const uint16_t *b, int64_t ldb, float *c, int64_t ldc,
                                            float alpha, int accumulate)
{
    for (int64_t n = 0; n < N; n += 4 * FA_LANES) {
        const int nv = (int)((N - n) / FA_LANES < 4 ? (N - n) / FA_LANES : 4);
        for (int64_t m = 0; m < M; m += FA_ROWS) {
            const int nm = (int)(M - m < FA_ROWS ? M - m : FA_ROWS);
            switch (nm * 8 + nv) {
                FA_DOT_ROWS(1) FA_DOT_ROWS(2) FA_DOT_ROWS(3) FA_DOT_ROWS(4) default : break;
            }
        }
    }
}
#undef FA_DOT_CASE
#undef FA_DOT_ROWS

/* Keys c and c + 1 of FA_LANES rows, rounded and interleaved: p0[0] p1[0] p0[1] ... */
FA_INLINE void FA_NAME(pairs_store_)(uint16_t *dst, vec p0, vec p1)
{
    const vbf16 pair = svcvtnt_bf16_x(svcvt_bf16_x(FA_PT, p0), FA_PT, p1);
    svst1(FA_PTRUE_B16, (bfloat16_t *)(void *)dst, pair);
}

#define FA_MAX_CHAINS               (FA_LINE_VECS >= 2 ? 2 : 4) /* as the sve table's (sve_tiles.h) */
#define FA_PAIRS_PAD                FA_REF_BF16_PAD_K
#define FA_PAIRS_STORE(dst, p0, p1) FA_NAME(pairs_store_)((dst), (p0), (p1))
#include "kernels/simd/softmax_body.h"

void FA_CAT(FA_CAT(fa_, FA_ISA), _bf16_online_softmax_pairs)(int64_t rows, int64_t ld, int64_t cols,
                                                             float scale, float *s, float *row_max,
                                                             float *row_sum, float *acc, int64_t acc_dim,
                                                             uint16_t *pp)
{
    FA_NAME(online_softmax_body_)(1, 1, scale, rows, ld, cols, s, row_max, row_sum, acc, ld, acc_dim, pp);
}
