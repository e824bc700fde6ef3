/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_scores_visible_<FA_SFX>, fa_accumulate_visible_<FA_SFX> and fa_accumulate_t_visible_<FA_SFX>,
 * written once for both element types: included by visible_products.c, after its span helpers and
 * rows walk, with FA_T and FA_SFX (f32/f64: also the kernel table's type, fa_kernels_<FA_SFX>)
 * defined. */

#include "template.h"

/* Rows of one step of a causal diagonal's staircase (fa_accumulate_visible_): two of the avx512
 * kernels' 6-row register blocks. On the Xeon VM, f32 B4 H16 N512 D64 causal, 1 thread: 17.4-18.6 ms
 * with steps of 6, 12 or 24 rows, 18.8-20.0 with the whole block as one step (three rounds). */
#define FA_STAIR_ROWS 12

/* 1 when n rows of `width` values (row stride `stride`) are all finite: x·0 is 0 for finite x and
 * NaN for an infinity or a NaN, so the sum is 0 exactly when every value is finite. */
static int FA_NAME(all_finite_)(const FA_T *x, int64_t n, int64_t width, int64_t stride)
{
    FA_T sum = 0;
    for (int64_t i = 0; i < n; i++) {
        const FA_T *row = x + i * stride;
#pragma omp simd reduction(+ : sum)
        for (int64_t y = 0; y < width; y++) sum += row[y] * (FA_T)0;
    }
    return sum == 0;
}

/* The scores of one run of keys [c, c + n) over the rows [lo, hi) (whole vectors: the run's row
 * range rounded out). The padding rows are set as scores leaves them (0: the packed queries' padding
 * is 0), and with `masked` the other rows too, to -inf (visible_products.h). */
static void FA_NAME(scores_run_)(const FA_NAME(fa_kernels_) * k, int64_t rows, int64_t c, int64_t n,
                                 int64_t lo, int64_t hi, int masked, int64_t dim, const FA_T *qt, int64_t ld,
                                 const FA_T *kt, int64_t k_stride, FA_T *s)
{
    if (hi > lo)
        k->scores_rows(hi - lo, ld, n, dim, qt + lo, kt + c * k_stride, k_stride, s + c * ld + lo);
    else
        lo = hi = rows;
    for (int64_t x = c; x < c + n; x++) {
        for (int64_t r = 0; masked && r < lo; r++) s[x * ld + r] = -(FA_T)INFINITY;
        for (int64_t r = hi; masked && r < rows; r++) s[x * ld + r] = -(FA_T)INFINITY;
        for (int64_t r = hi > rows ? hi : rows; r < ld; r++) s[x * ld + r] = 0;
    }
}

/* An edge tile's scores over only the whole row vectors that see some key of each register block of
 * keys (runs of blocks with the same rows in one call): under a window of 256 a 64-row block's tile
 * has 320 columns of which a row sees 257, a fifth lost if every row took them all. */
void FA_NAME(fa_scores_visible_)(const FA_NAME(fa_kernels_) * k, const fa_problem *p, int64_t row0,
                                 int64_t rows, int64_t col0, int64_t cols, int64_t dim, const FA_T *qt,
                                 int64_t ld, const FA_T *kt, int64_t k_stride, FA_T *s, int masked)
{
    if (rows <= FA_HALF_ROWS || fa_tile_fully_visible(p, row0, rows, col0, cols)) {
        k->scores(rows, ld, cols, dim, qt, kt, k_stride, s);
        return;
    }
    /* Sub-blocks start at a multiple of the padding unit and keep more than FA_HALF_ROWS rows, so
     * each score has the bits of the whole tile's call (kernels.h, scores_rows). */
    const int64_t unit = k->traits.pad_elems, step = k->traits.scores_keys;
    rows_walk walk = rows_walk_of(p, row0, rows, col0);
    int64_t run0 = 0, run_lo = 0, run_hi = 0;
    for (int64_t c = 0; c < cols; c += step) {
        const int64_t n = cols - c < step ? cols - c : step;
        const span seen = rows_seeing_some(&walk, c, c + n);
        int64_t lo = seen.begin / unit * unit, hi = fa_round_up(seen.end, unit);
        if (hi > rows) hi = rows;
        if (hi > lo && hi - lo <= FA_HALF_ROWS) lo -= unit; /* hi is rows then, and lo >= unit */
        if (hi <= lo) lo = hi = 0;
        if (c > 0 && (lo != run_lo || hi != run_hi)) {
            FA_NAME(scores_run_)
            (k, rows, run0, c - run0, run_lo, run_hi, masked, dim, qt, ld, kt, k_stride, s);
            run0 = c;
        }
        run_lo = lo, run_hi = hi;
    }
    FA_NAME(scores_run_)(k, rows, run0, cols - run0, run_lo, run_hi, masked, dim, qt, ld, kt, k_stride, s);
}

/* Keys a step of sums_seen_ looks up the rows of. */
#define FA_SEEN_STEP 8

/* One run of sums_seen_: keys [c, c + n) over query rows [rows.begin, rows.end), into acc's query
 * rows (accumulate: P·V, dS·K) or key rows (trans, accumulate_t: Pᵀ·dO, dSᵀ·Q). */
static void FA_NAME(sums_run_)(const FA_NAME(fa_kernels_) * k, int trans, int64_t c, int64_t n, span rows,
                               int64_t dim, const FA_T *w, int64_t ld, const FA_T *x, int64_t x_stride,
                               FA_T *acc, int64_t acc_stride)
{
    if (rows.end <= rows.begin) return;
    const FA_T *wr = w + c * ld + rows.begin;
    if (trans)
        k->accumulate_t(rows.end - rows.begin, n, dim, wr, ld, x + rows.begin * x_stride, x_stride,
                        acc + c * acc_stride, acc_stride);
    else
        k->accumulate(rows.end - rows.begin, n, dim, wr, ld, x + c * x_stride, x_stride,
                      acc + rows.begin * acc_stride, acc_stride);
}

/* An edge tile's sums (accumulate, or accumulate_t with trans) whose masked weights and the operand
 * rows they meet are finite, so that a masked entry adds an exact zero: each step of FA_SEEN_STEP
 * keys over only the query rows that see one of them (runs of steps with the same rows in one call).
 * Every accumulator element adds the same nonzero terms in the same order as one call over the tile,
 * and adding a zero to a sum that began at +0 changes no bit. */
static void FA_NAME(sums_seen_)(const FA_NAME(fa_kernels_) * k, int trans, const fa_problem *p, int64_t row0,
                                int64_t rows, int64_t col0, int64_t cols, int64_t dim, const FA_T *w,
                                int64_t ld, const FA_T *x, int64_t x_stride, FA_T *acc, int64_t acc_stride)
{
    rows_walk walk = rows_walk_of(p, row0, rows, col0);
    span run = {0, 0};
    int64_t run0 = 0;
    for (int64_t c = 0; c < cols; c += FA_SEEN_STEP) {
        const int64_t n = cols - c < FA_SEEN_STEP ? cols - c : FA_SEEN_STEP;
        span seen = rows_seeing_some(&walk, c, c + n);
        if (seen.end <= seen.begin) seen.begin = seen.end = 0;
        if (c > 0 && (seen.begin != run.begin || seen.end != run.end)) {
            FA_NAME(sums_run_)(k, trans, run0, c - run0, run, dim, w, ld, x, x_stride, acc, acc_stride);
            run0 = c;
        }
        run = seen;
    }
    FA_NAME(sums_run_)(k, trans, run0, cols - run0, run, dim, w, ld, x, x_stride, acc, acc_stride);
}

void FA_NAME(fa_accumulate_visible_)(const FA_NAME(fa_kernels_) * k, const fa_problem *p, int64_t row0,
                                     int64_t rows, int64_t col0, int64_t cols, int64_t dim, const FA_T *w,
                                     int64_t ld, const FA_T *x, int64_t x_stride, FA_T *acc,
                                     int64_t acc_stride)
{
    if (fa_tile_fully_visible(p, row0, rows, col0, cols)) {
        k->accumulate(rows, cols, dim, w, ld, x, x_stride, acc, acc_stride);
        return;
    }
    /* A window gives a tile a left edge too: then the rows' parts outside the common span add up to
     * as much as half the span, and one call over the whole tile beats row-by-row calls (25% fewer
     * instructions for the P·V of a window of 256). It may be made when the operand rows of the
     * columns some row does not see are finite: the weights at masked entries are then exact zeros
     * (the epilogue's -inf through exp, or zeroed score gradients), or NaN only in a row whose max
     * is NaN, which is NaN anyway; a column every row sees adds the same terms either way. Only
     * those edge columns are scanned (a 32-row block under a window of 256: 62 of 288). On a causal
     * diagonal alone (no left edge) the staircase below leaves little row by row, and the scan would
     * only add. */
    const span common = common_columns(p, row0, rows, col0, cols);
    if (common.begin > 0 && FA_NAME(all_finite_)(x, common.begin, dim, x_stride) &&
        FA_NAME(all_finite_)(x + common.end * x_stride, cols - common.end, dim, x_stride)) {
        FA_NAME(sums_seen_)(k, 0, p, row0, rows, col0, cols, dim, w, ld, x, x_stride, acc, acc_stride);
        return;
    }
    /* A staircase: each group of FA_STAIR_ROWS rows adds the columns all of them see in one call,
     * then each row the few it sees besides, row by row. Every accumulator element still adds its
     * row's columns in order. */
    for (int64_t g = 0; g < rows; g += FA_STAIR_ROWS) {
        int64_t n = rows - g < FA_STAIR_ROWS ? rows - g : FA_STAIR_ROWS;
        span all = common_columns(p, row0 + g, n, col0, cols);
        if (all.end > all.begin)
            k->accumulate(n, all.end - all.begin, dim, w + all.begin * ld + g, ld, x + all.begin * x_stride,
                          x_stride, acc + g * acc_stride, acc_stride);
        for (int64_t r = g; r < g + n; r++) {
            span mine = row_columns(p, row0 + r, col0, cols);
            /* what this row sees outside the common span: a part before it and a part after it */
            span part[2] = {{mine.begin, mine.end < all.begin ? mine.end : all.begin},
                            {mine.begin > all.end ? mine.begin : all.end, mine.end}};
            if (all.end <= all.begin) { /* no common span: part[0] is it all */
                part[0] = mine;
                part[1].end = part[1].begin;
            }
            for (int i = 0; i < 2; i++)
                if (part[i].end > part[i].begin)
                    k->accumulate(1, part[i].end - part[i].begin, dim, w + part[i].begin * ld + r, ld,
                                  x + part[i].begin * x_stride, x_stride, acc + r * acc_stride, acc_stride);
        }
    }
}

/* An edge tile whose masked weights and the operand rows they meet are finite is one kernel call
 * over the whole tile: its masked weights are then exact zeros (the epilogue's -inf through exp, or
 * zeroed score gradients), and finite·0 adds nothing but a zero; an entry every row sees adds the
 * same term either way. So only the weights of the columns some row does not see, and the operand
 * rows that do not see every column, are scanned (a 32-row block under a window of 256: 62 of 288
 * columns). Key by key, a causal diagonal costs a kernel call and a scan of the block's rows per key
 * (the backward of B=8 H=16 N=512 D=64 causal ran 18% slower so). fa_accumulate_visible_* keeps its
 * staircase edge: there the few-rows kernel path is as fast as the whole square, and the scan would
 * only add. */
void FA_NAME(fa_accumulate_t_visible_)(const FA_NAME(fa_kernels_) * k, const fa_problem *p, int64_t row0,
                                       int64_t rows, int64_t col0, int64_t cols, int64_t dim, const FA_T *w,
                                       int64_t ld, const FA_T *x, int64_t x_stride, FA_T *acc,
                                       int64_t acc_stride)
{
    if (fa_tile_fully_visible(p, row0, rows, col0, cols)) {
        k->accumulate_t(rows, cols, dim, w, ld, x, x_stride, acc, acc_stride);
        return;
    }
    const span common = common_columns(p, row0, rows, col0, cols);
    const span all = rows_seeing(p, row0, rows, col0, 0, cols - 1, cols);
    if (FA_NAME(all_finite_)(w, common.begin, rows, ld) &&
        FA_NAME(all_finite_)(w + common.end * ld, cols - common.end, rows, ld) &&
        FA_NAME(all_finite_)(x, all.begin, dim, x_stride) &&
        FA_NAME(all_finite_)(x + all.end * x_stride, rows - all.end, dim, x_stride)) {
        FA_NAME(sums_seen_)(k, 1, p, row0, rows, col0, cols, dim, w, ld, x, x_stride, acc, acc_stride);
        return;
    }
    if (all.end > all.begin)
        k->accumulate_t(all.end - all.begin, cols, dim, w + all.begin, ld, x + all.begin * x_stride, x_stride,
                        acc, acc_stride);
    for (int64_t c = 0; c < cols; c++) {
        span mine = rows_seeing(p, row0, rows, col0, c, c, cols);
        span part[2] = {{mine.begin, mine.end < all.begin ? mine.end : all.begin},
                        {mine.begin > all.end ? mine.begin : all.end, mine.end}};
        if (all.end <= all.begin) part[1].end = part[1].begin;
        if (all.end <= all.begin) part[0] = mine;
        for (int i = 0; i < 2; i++)
            if (part[i].end > part[i].begin)
                k->accumulate_t(part[i].end - part[i].begin, 1, dim, w + c * ld + part[i].begin, ld,
                                x + part[i].begin * x_stride, x_stride, acc + c * acc_stride, acc_stride);
    }
}
