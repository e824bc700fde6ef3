/* SPDX-License-Identifier: BSD-3-Clause */
/* One mask fill, written once for every element type and fill value: included by epilogue.c with
 * FA_T (the element type), FA_MASK_NAME (the function's name) and FA_MASK_VALUE (what a hidden
 * entry becomes) defined. The function sets the entries of the transposed score tile s[c][r]
 * (row stride ld, corner at query row0 and key col0) that the masks hide to FA_MASK_VALUE. */

void FA_MASK_NAME(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, FA_T *s,
                  int64_t ld)
{
    /* Column by column, so every fill is a contiguous run of the transposed tile (a window makes
     * every tile an edge tile: strided stores row by row cost a fifth of the products there). The
     * rows that see key col0 + c are [lo, hi): with one row per position the band gives both in
     * closed form (fa_band_of); with grouped rows lo is the first row whose range ends after the
     * key, hi the first whose range begins after it, both only growing with c (ranges are monotone
     * in the row): O(rows + cols) range look-ups per tile. */
    fa_band band;
    if (fa_band_of(p, &band)) {
        for (int64_t c = 0; c < cols; c++) {
            const int64_t key = col0 + c - row0;
            const int64_t lo = band.first == FA_BAND_OPEN_BELOW ? 0 : fa_clamp64(key + band.first, 0, rows);
            const int64_t hi =
                band.last == FA_BAND_OPEN_ABOVE ? rows : fa_clamp64(key + band.last + 1, 0, rows);
            FA_T *sc = s + c * ld;
            for (int64_t r = 0; r < lo; r++) sc[r] = FA_MASK_VALUE;
            for (int64_t r = hi > lo ? hi : lo; r < rows; r++) sc[r] = FA_MASK_VALUE;
        }
        return;
    }
    int64_t lo = 0, hi = 0;
    for (int64_t c = 0; c < cols; c++) {
        int64_t key = col0 + c;
        while (lo < rows && fa_visible_keys(p, row0 + lo).end <= key) lo++;
        if (hi < lo) hi = lo;
        while (hi < rows && fa_visible_keys(p, row0 + hi).begin <= key) hi++;
        FA_T *sc = s + c * ld;
        for (int64_t r = 0; r < lo; r++) sc[r] = FA_MASK_VALUE;
        for (int64_t r = hi; r < rows; r++) sc[r] = FA_MASK_VALUE;
    }
}
