/* SPDX-License-Identifier: BSD-3-Clause */
/* The merge of one row's partial results over disjoint key sets, written once for fa_merge and for
 * the forward's own split-KV: included (inside their templates) with FA_T, FA_NAME, FA_EXP and
 * FA_LOG defined. One code path, so a split the library makes and one the user makes with fa_merge
 * combine the same way. */

/* Part k holds a normalized row rows[k][0..dv) and its lse lses[k]. With M the largest lse (NaN
 * wins), w_k = exp(lse_k - M): dst = Σ_k w_k·rows[k] / Σ_k w_k and *lse = M + log Σ_k w_k, summed in
 * part order. A part with lse = -inf saw no key: it weighs exactly 0 and is not read, so whatever
 * its row holds (NaN, Inf, stale bytes) reaches nothing. A row no part saw gets zeros and -inf.
 * dst must not overlap a part. Returns whether some part saw a key (the weight sum is not 0). */
static int FA_NAME(merge_row_)(int64_t n, const FA_T *lses, const FA_T *const *rows, int64_t dv, FA_T *dst,
                               FA_T *lse)
{
    FA_T m = -(FA_T)INFINITY;
    for (int64_t k = 0; k < n; k++)
        if (lses[k] > m || lses[k] != lses[k]) m = lses[k];
    FA_T sum = 0;
    for (int64_t y = 0; y < dv; y++) dst[y] = 0;
    if (m != -(FA_T)INFINITY) {
        for (int64_t k = 0; k < n; k++) {
            if (lses[k] == -(FA_T)INFINITY) continue;
            FA_T w = FA_EXP(lses[k] - m);
            sum += w;
            for (int64_t y = 0; y < dv; y++) dst[y] += w * rows[k][y];
        }
    }
    if (sum == 0) {
        *lse = -(FA_T)INFINITY;
        return 0;
    }
    for (int64_t y = 0; y < dv; y++) dst[y] /= sum;
    *lse = m + FA_LOG(sum);
    return 1;
}
