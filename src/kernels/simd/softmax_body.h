/* SPDX-License-Identifier: BSD-3-Clause */
/* The online softmax of the SIMD tables, as one inline body (FA_NAME(online_softmax_lines_)) that
 * simd/softmax.h's kernels and the bf16 tables' softmax (amx, neon_bf16, sve_bf16, through
 * FA_NAME(online_softmax_body_): every vector of every line) instantiate, written against the
 * vocabulary of simd/simd.h. A file that defines FA_PAIRS_STORE(dst, p0, p1) (store 16 rows' pair
 * of probabilities of two consecutive keys, rounded to bf16 and interleaved, at dst) gets the
 * variant that writes P in pairs (kernels.h, "bf16 on dot-product units") instead of floats. */

/* ---- online softmax over a transposed tile ----
 * Two passes per line. The first finds the new max: FA_MAX_CHAINS columns per step give as many
 * independent max chains per vector, and the NaN check two mask chains (a max, or a masked compare
 * into a k register, has a latency of 3-4 cycles: with two chains the pass waited on it, 17.4
 * FMA-port slots per score vector for the whole softmax on the Intel VM against 15.8 with four, in
 * L1). The second computes p = exp(s - m), stores it and sums it.
 *
 * The FMA-port budget. On Intel server cores every 512-bit op but a plain load or broadcast issues
 * on the two FMA ports (measured on an Intel Xeon VM: add, max, compare, kmov, masked moves, scalef one
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
 *   total        14.8 (an earlier loop took 19.3 = max, compare and kmovw, then subtract, multiply,
 *                     compare, vrndscaleps (2), masked subtract, 7 FMAs, scalef, add, store)
 * Rows that saw no key cost nothing per vector: they subtract +inf (m_sub) instead of being masked.
 * The register copy of the reduced argument that the polynomial's first FMA needs is a move the
 * renamer eliminates. AVX2 spends more per vector: its exp2 clamps and builds 2^n in the exponent
 * field (avx2_tiles.h: 16 ops, 7 of them FMAs), and NaN takes a compare and an AND per two vectors. */
/* transposed: acc[y·ld + r] instead of acc rows. scaled: s holds raw scores, scale·s the scores (the
 * bf16 path's unscaled dot): the max is taken raw and scaled once per line, and p = exp(scale·s - m)
 * computes scale·s - m in one FMA (one rounding, where the float path rounds scale·q first).
 * vecs: the vectors of each line it computes, FA_LINE_VECS, or fewer for a tile whose real rows all
 * lie in the first `vecs` vectors of its first line (a decode step's rows): then only those are
 * computed, and the padding rows past them keep what they held (nothing reads them). */
FA_INLINE void FA_NAME(online_softmax_lines_)(const int vecs, const int transposed, const int scaled,
                                              FA_T scale, int64_t rows, int64_t ld, int64_t cols, FA_T *s,
                                              FA_T *row_max, FA_T *row_sum, FA_T *acc, int64_t acc_stride,
                                              int64_t acc_width, uint16_t *pp)
{
    const vec vscale = V_SET1(scale);
#ifndef FA_PAIRS_STORE
    (void)pp; /* only a file that can round to bf16 writes P in pairs */
#endif
    const vec neg_inf = V_SET1(-(FA_T)INFINITY), pos_inf = V_SET1((FA_T)INFINITY), one = V_SET1((FA_T)1),
              nan = V_SET1((FA_T)NAN);
    const int64_t extent = vecs < FA_LINE_VECS ? FA_LINE : ld;
    for (int64_t r = 0; r < extent; r += FA_LINE) {
        FA_T *sr = s + r;
        vec m_old[FA_LINE_VECS], hi[FA_LINE_VECS][FA_MAX_CHAINS], m_new[FA_LINE_VECS], m_sub[FA_LINE_VECS],
            m_neg[FA_LINE_VECS], sum[FA_LINE_VECS], alpha[FA_LINE_VECS];
        vmask ordered[FA_LINE_VECS][2], live[FA_LINE_VECS];
        FA_UNROLL
        for (int h = 0; h < vecs; h++) {
            m_old[h] = V_LOAD(row_max + r + h * FA_LANES);
            hi[h][0] = scaled ? neg_inf : m_old[h]; /* raw scores: the old max enters after scaling */
            FA_UNROLL
            for (int j = 1; j < FA_MAX_CHAINS; j++) hi[h][j] = neg_inf;
            /* The running max must become NaN if any score (or the old max) is NaN: V_MAX alone
             * would drop it. `ordered` keeps the rows that have seen no NaN. */
            ordered[h][0] = V_CMP(m_old[h], m_old[h], _CMP_ORD_Q);
            ordered[h][1] = ordered[h][0];
        }
        int64_t c = 0;
        for (; c + FA_MAX_CHAINS <= cols; c += FA_MAX_CHAINS) {
            FA_UNROLL
            for (int h = 0; h < vecs; h++) {
                vec x[FA_MAX_CHAINS];
                FA_UNROLL
                for (int j = 0; j < FA_MAX_CHAINS; j++) {
                    x[j] = V_LOAD(sr + (c + j) * ld + h * FA_LANES);
                    hi[h][j] = V_MAX(hi[h][j], x[j]);
                }
                /* one compare checks two columns for NaN; two mask chains */
                FA_UNROLL
                for (int j = 0; j < FA_MAX_CHAINS; j += 2)
                    ordered[h][j / 2 % 2] = V_AND_CMP(ordered[h][j / 2 % 2], x[j], x[j + 1], _CMP_ORD_Q);
            }
        }
        for (; c < cols; c++) {
            FA_UNROLL
            for (int h = 0; h < vecs; h++) {
                vec x0 = V_LOAD(sr + c * ld + h * FA_LANES);
                hi[h][0] = V_MAX(hi[h][0], x0);
                ordered[h][0] = V_AND_CMP(ordered[h][0], x0, x0, _CMP_ORD_Q);
            }
        }
        FA_UNROLL
        for (int h = 0; h < vecs; h++) {
            FA_UNROLL
            for (int j = 1; j < FA_MAX_CHAINS; j++) hi[h][0] = V_MAX(hi[h][0], hi[h][j]);
            if (scaled) hi[h][0] = V_MAX(m_old[h], V_MUL(hi[h][0], vscale));
        }
        FA_UNROLL
        for (int h = 0; h < vecs; h++) {
            m_new[h] = V_SELECT(V_MASK_AND(ordered[h][0], ordered[h][1]), nan, hi[h][0]);
            /* Rows whose max is still -inf have seen no key: p = 0, alpha = 1 (exp2(-inf + inf) is NaN).
             * Their scores are all -inf, so subtracting +inf instead of their max gives -inf, which
             * exp2 flushes to 0: no mask in the loop below. */
            live[h] = V_CMP(m_new[h], neg_inf, _CMP_NEQ_UQ);
            m_sub[h] = V_SELECT(live[h], pos_inf, m_new[h]);
            m_neg[h] = V_SUB(V_ZERO(), m_sub[h]);
            sum[h] = V_ZERO();
        }
#ifdef FA_PAIRS_STORE
        /* P in pairs of keys (kernels.h: pp[(c/2)·2·ld + 2r + c%2]), zero up to FA_PAIRS_PAD keys, and
         * no float store: per two score vectors one conversion and one interleave (FA_PAIRS_STORE)
         * and one 64-byte store, where the float p costs two stores and a later pass over them. */
        if (pp) {
            const int64_t cols_pad = (cols + FA_PAIRS_PAD - 1) / FA_PAIRS_PAD * FA_PAIRS_PAD;
            FA_UNROLL
            for (int h = 0; h < vecs; h++) {
                uint16_t *out = pp + 2 * (r + h * FA_LANES);
                for (c = 0; c < cols_pad; c += 2) {
                    vec p0 = V_ZERO(), p1 = V_ZERO();
                    if (c < cols) {
                        p0 = FA_NAME(exp_of_difference_)(
                            V_FMA(V_LOAD(sr + c * ld + h * FA_LANES), vscale, m_neg[h]));
                        sum[h] = V_ADD(sum[h], p0);
                    }
                    if (c + 1 < cols) {
                        p1 = FA_NAME(exp_of_difference_)(
                            V_FMA(V_LOAD(sr + (c + 1) * ld + h * FA_LANES), vscale, m_neg[h]));
                        sum[h] = V_ADD(sum[h], p1);
                    }
                    FA_PAIRS_STORE(out + (c / 2) * 2 * ld, p0, p1);
                }
            }
        } else
#endif
            for (c = 0; c < cols; c++) {
                FA_UNROLL
                for (int h = 0; h < vecs; h++) {
                    FA_T *sc = sr + c * ld + h * FA_LANES;
                    vec p = FA_NAME(exp_of_difference_)(scaled ? V_FMA(V_LOAD(sc), vscale, m_neg[h])
                                                               : V_SUB(V_LOAD(sc), m_sub[h]));
                    V_STORE(sc, p);
                    sum[h] = V_ADD(sum[h], p);
                }
            }
        unsigned raised = 0;
        FA_UNROLL
        for (int h = 0; h < vecs; h++) {
            alpha[h] = V_SELECT(live[h], one, FA_NAME(exp_of_difference_)(V_SUB(m_old[h], m_new[h])));
            V_STORE(row_sum + r + h * FA_LANES, V_FMA(alpha[h], V_LOAD(row_sum + r + h * FA_LANES), sum[h]));
            V_STORE(row_max + r + h * FA_LANES, m_new[h]);
            raised |= (unsigned)V_MASK_BITS(V_CMP(alpha[h], one, _CMP_NEQ_UQ)) << (h * FA_LANES);
        }
        /* Lazy rescaling: only rows whose max rose (alpha != 1) touch their accumulator. */
        raised &= FA_NAME(line_bits_)(rows - r);
        if (!raised) continue;
        if (transposed) { /* acc[y·ld + r]: the line's rows are a vector of every acc row y */
            for (int64_t y = 0; y < acc_width; y++) {
                FA_UNROLL
                for (int h = 0; h < vecs; h++) {
                    FA_T *ay = acc + y * ld + r + h * FA_LANES;
                    V_STORE(ay, V_MUL(V_LOAD(ay), alpha[h]));
                }
            }
            continue;
        }
        _Alignas(64) FA_T a[FA_LINE];
        FA_UNROLL
        for (int h = 0; h < vecs; h++) V_STORE(a + h * FA_LANES, alpha[h]);
        for (int i = 0; i < FA_LINE; i++) {
            if (!((raised >> i) & 1)) continue;
            FA_T *ar = acc + (r + i) * acc_stride;
            vec w = V_SET1(a[i]);
            for (int64_t y = 0; y < acc_width; y += FA_LANES) V_STORE(ar + y, V_MUL(V_LOAD(ar + y), w));
        }
    }
}

FA_INLINE void FA_NAME(online_softmax_body_)(const int transposed, const int scaled, FA_T scale, int64_t rows,
                                             int64_t ld, int64_t cols, FA_T *s, FA_T *row_max, FA_T *row_sum,
                                             FA_T *acc, int64_t acc_stride, int64_t acc_width, uint16_t *pp)
{
    FA_NAME(online_softmax_lines_)
    (FA_LINE_VECS, transposed, scaled, scale, rows, ld, cols, s, row_max, row_sum, acc, acc_stride, acc_width,
     pp);
}
