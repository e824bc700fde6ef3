/* SPDX-License-Identifier: BSD-3-Clause */
/* The x86 tables' online softmax, probabilities and score gradient (kernels.h), written once against
 * the vocabulary of simd/simd.h. Defines FA_NAME(online_softmax_), FA_NAME(probabilities_) and
 * FA_NAME(score_grad_).
 *
 * A score tile is walked one 64-byte line of rows at a time (FA_LINE_VECS vectors: avx512 1, avx2
 * 2): every vector of a line goes through each column together, so a pass over the tile reads each
 * cache line once (the tile is larger than L1), and the row statistics are plain vertical vector
 * operations. */

/* ---- online softmax over a transposed tile ----
 * Two passes per line. The first finds the new max: FA_MAX_CHAINS columns per step give as many
 * independent max chains per vector, and the NaN check two mask chains (a max, or a masked compare
 * into a k register, has a latency of 3-4 cycles: with two chains the pass waited on it, 17.4
 * FMA-port slots per score vector for the whole softmax on the Intel VM against 15.8 with four, in
 * L1). The second computes p = exp(s - m), stores it and sums it.
 *
 * The FMA-port budget. On Intel server cores every 512-bit op but a plain load or broadcast issues
 * on the two FMA ports (issue 12's measurements: add, max, compare, kmov, masked moves, scalef one
 * slot each, vrndscaleps two, a store about 1.3), so each op per score vector here is a slot taken
 * from Q·Kᵀ and P·V, which spend D + Dv FMAs per vector. AVX-512 f32, per vector of 16 scores
 * (from the object code of this loop, gcc 12 -O2):
 *   first pass   1    max: the new row max, which exp needs before any p
 *                0.5  one masked compare per two vectors (V_AND_CMP, ORD): NaN must win the max
 *                     and V_MAX alone drops it; a k register AND costs nothing extra
 *   second pass  1    subtract the max (before any rounding: kernels.h says why it is not folded
 *                     into q or into one FMA with log2 e)
 *                1    multiply by log2 e (exp through exp2)
 *                9    exp2 (avx512_tiles.h: compare for the flush, vreduceps, 6 FMAs, scalef)
 *                1    add to the row sum
 *                1.3  store p, which P·V reads
 *   total        14.8 (before issue 12: 19.3 = max, compare and kmovw, then subtract, multiply,
 *                     compare, vrndscaleps (2), masked subtract, 7 FMAs, scalef, add, store)
 * Rows that saw no key cost nothing per vector: they subtract +inf (m_sub) instead of being masked.
 * The register copy of the reduced argument that the polynomial's first FMA needs is a move the
 * renamer eliminates. AVX2 spends more per vector: its exp2 clamps and builds 2^n in the exponent
 * field (avx2_tiles.h: 16 ops, 7 of them FMAs), and NaN takes a compare and an AND per two vectors. */
FA_INLINE void FA_NAME(online_softmax_body_)(const int transposed, int64_t rows, int64_t ld, int64_t cols, FA_T *s,
                                              FA_T *row_max, FA_T *row_sum, FA_T *acc, int64_t acc_stride,
                                              int64_t acc_width)
{
    const vec neg_inf = V_SET1(-(FA_T)INFINITY), pos_inf = V_SET1((FA_T)INFINITY), one = V_SET1((FA_T)1),
              nan = V_SET1((FA_T)NAN);
    for (int64_t r = 0; r < ld; r += FA_LINE) {
        FA_T *sr = s + r;
        vec m_old[FA_LINE_VECS], hi[FA_LINE_VECS][FA_MAX_CHAINS], m_new[FA_LINE_VECS], m_sub[FA_LINE_VECS],
            sum[FA_LINE_VECS], alpha[FA_LINE_VECS];
        vmask ordered[FA_LINE_VECS][2], live[FA_LINE_VECS];
        FA_UNROLL for (int h = 0; h < FA_LINE_VECS; h++) {
            m_old[h] = V_LOAD(row_max + r + h * FA_LANES);
            hi[h][0] = m_old[h];
            FA_UNROLL for (int j = 1; j < FA_MAX_CHAINS; j++) hi[h][j] = neg_inf;
            /* The running max must become NaN if any score (or the old max) is NaN: V_MAX alone
             * would drop it. `ordered` keeps the rows that have seen no NaN. */
            ordered[h][0] = V_CMP(m_old[h], m_old[h], _CMP_ORD_Q);
            ordered[h][1] = ordered[h][0];
        }
        int64_t c = 0;
        for (; c + FA_MAX_CHAINS <= cols; c += FA_MAX_CHAINS)
            FA_UNROLL for (int h = 0; h < FA_LINE_VECS; h++) {
                vec x[FA_MAX_CHAINS];
                FA_UNROLL for (int j = 0; j < FA_MAX_CHAINS; j++) {
                    x[j] = V_LOAD(sr + (c + j) * ld + h * FA_LANES);
                    hi[h][j] = V_MAX(hi[h][j], x[j]);
                }
                /* one compare checks two columns for NaN; two mask chains */
                FA_UNROLL for (int j = 0; j < FA_MAX_CHAINS; j += 2)
                    ordered[h][j / 2 % 2] = V_AND_CMP(ordered[h][j / 2 % 2], x[j], x[j + 1], _CMP_ORD_Q);
            }
        for (; c < cols; c++)
            FA_UNROLL for (int h = 0; h < FA_LINE_VECS; h++) {
                vec x0 = V_LOAD(sr + c * ld + h * FA_LANES);
                hi[h][0] = V_MAX(hi[h][0], x0);
                ordered[h][0] = V_AND_CMP(ordered[h][0], x0, x0, _CMP_ORD_Q);
            }
        FA_UNROLL for (int h = 0; h < FA_LINE_VECS; h++) {
            FA_UNROLL for (int j = 1; j < FA_MAX_CHAINS; j++) hi[h][0] = V_MAX(hi[h][0], hi[h][j]);
        }
        FA_UNROLL for (int h = 0; h < FA_LINE_VECS; h++) {
            m_new[h] = V_SELECT(V_MASK_AND(ordered[h][0], ordered[h][1]), nan, hi[h][0]);
            /* Rows whose max is still -inf have seen no key: p = 0, alpha = 1 (exp2(-inf + inf) is NaN).
             * Their scores are all -inf, so subtracting +inf instead of their max gives -inf, which
             * exp2 flushes to 0: no mask in the loop below. */
            live[h] = V_CMP(m_new[h], neg_inf, _CMP_NEQ_UQ);
            m_sub[h] = V_SELECT(live[h], pos_inf, m_new[h]);
            sum[h] = V_ZERO();
        }
        for (c = 0; c < cols; c++)
            FA_UNROLL for (int h = 0; h < FA_LINE_VECS; h++) {
                FA_T *sc = sr + c * ld + h * FA_LANES;
                vec p = FA_NAME(exp_of_difference_)(V_SUB(V_LOAD(sc), m_sub[h]));
                V_STORE(sc, p);
                sum[h] = V_ADD(sum[h], p);
            }
        unsigned raised = 0;
        FA_UNROLL for (int h = 0; h < FA_LINE_VECS; h++) {
            alpha[h] = V_SELECT(live[h], one, FA_NAME(exp_of_difference_)(V_SUB(m_old[h], m_new[h])));
            V_STORE(row_sum + r + h * FA_LANES, V_FMA(alpha[h], V_LOAD(row_sum + r + h * FA_LANES), sum[h]));
            V_STORE(row_max + r + h * FA_LANES, m_new[h]);
            raised |= (unsigned)V_MASK_BITS(V_CMP(alpha[h], one, _CMP_NEQ_UQ)) << (h * FA_LANES);
        }
        /* Lazy rescaling: only rows whose max rose (alpha != 1) touch their accumulator. */
        raised &= FA_NAME(line_bits_)(rows - r);
        if (!raised) continue;
        if (transposed) { /* acc[y·ld + r]: the line's rows are a vector of every acc row y */
            for (int64_t y = 0; y < acc_width; y++)
                FA_UNROLL for (int h = 0; h < FA_LINE_VECS; h++) {
                    FA_T *ay = acc + y * ld + r + h * FA_LANES;
                    V_STORE(ay, V_MUL(V_LOAD(ay), alpha[h]));
                }
            continue;
        }
        _Alignas(64) FA_T a[FA_LINE];
        FA_UNROLL for (int h = 0; h < FA_LINE_VECS; h++) V_STORE(a + h * FA_LANES, alpha[h]);
        for (int i = 0; i < FA_LINE; i++) {
            if (!((raised >> i) & 1)) continue;
            FA_T *ar = acc + (r + i) * acc_stride;
            vec w = V_SET1(a[i]);
            for (int64_t y = 0; y < acc_width; y += FA_LANES) V_STORE(ar + y, V_MUL(V_LOAD(ar + y), w));
        }
    }
}

static void FA_NAME(online_softmax_)(int64_t rows, int64_t ld, int64_t cols, FA_T *s, FA_T *row_max,
                                     FA_T *row_sum, FA_T *acc, int64_t acc_stride, int64_t acc_width)
{
    FA_NAME(online_softmax_body_)(0, rows, ld, cols, s, row_max, row_sum, acc, acc_stride, acc_width);
}

#if FA_SOFTMAX_T_ENTRY
/* The same over a transposed accumulator acc[y·ld + r], y < acc_dim (fa_kernels_bf16's
 * online_softmax_t): a raised line multiplies every acc row y by its alpha vector, rows whose max
 * did not rise by exactly 1. Exported by the ISA's template for the tables' bf16 sets. */
static void FA_NAME(online_softmax_t_)(int64_t rows, int64_t ld, int64_t cols, FA_T *s, FA_T *row_max,
                                       FA_T *row_sum, FA_T *acc, int64_t acc_dim)
{
    FA_NAME(online_softmax_body_)(1, rows, ld, cols, s, row_max, row_sum, acc, ld, acc_dim);
}
#endif

/* Backward: p = exp(s - lse), a line at a time. */
static void FA_NAME(probabilities_)(int64_t ld, int64_t cols, FA_T *s, const FA_T *lse)
{
    const vec neg_inf = V_SET1(-(FA_T)INFINITY), pos_inf = V_SET1((FA_T)INFINITY);
    for (int64_t r = 0; r < ld; r += FA_LINE) {
        vec l[FA_LINE_VECS];
        FA_UNROLL for (int h = 0; h < FA_LINE_VECS; h++) {
            /* Rows that saw no key (lse -inf, every score -inf) give 0, not NaN: they subtract +inf,
             * and exp2 flushes the -inf that leaves (as in the online softmax). */
            l[h] = V_LOAD(lse + r + h * FA_LANES);
            l[h] = V_SELECT(V_CMP(l[h], neg_inf, _CMP_NEQ_UQ), pos_inf, l[h]);
        }
        for (int64_t c = 0; c < cols; c++)
            FA_UNROLL for (int h = 0; h < FA_LINE_VECS; h++) {
                FA_T *sc = s + c * ld + r + h * FA_LANES;
                V_STORE(sc, FA_NAME(exp_of_difference_)(V_SUB(V_LOAD(sc), l[h])));
            }
    }
}

/* Backward: dp = p · (dp - delta). */
static void FA_NAME(score_grad_)(int64_t ld, int64_t cols, const FA_T *p, FA_T *dp, const FA_T *delta)
{
    for (int64_t r = 0; r < ld; r += FA_LANES) {
        vec d = V_LOAD(delta + r);
        for (int64_t c = 0; c < cols; c++)
            V_STORE(dp + c * ld + r, V_MUL(V_LOAD(p + c * ld + r), V_SUB(V_LOAD(dp + c * ld + r), d)));
    }
}
