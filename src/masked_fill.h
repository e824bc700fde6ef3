/* SPDX-License-Identifier: BSD-3-Clause */
/* One mask fill, written once for every element type and fill value: included by epilogue.c with
 * FA_T (the element type), FA_MASK_NAME (the function's name) and FA_MASK_VALUE (what a hidden
 * entry becomes) defined. The function sets the entries of the transposed score tile s[c][r]
 * (row stride ld, corner at query row0 and key col0) that the masks hide to FA_MASK_VALUE. */

void FA_MASK_NAME(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, FA_T *s,
                  int64_t ld)
{
    for (int64_t r = 0; r < rows; r++) {
        fa_key_range keys = fa_visible_keys(p, row0 + r);
        int64_t c0 = clamp(keys.begin - col0, 0, cols), c1 = clamp(keys.end - col0, c0, cols);
        for (int64_t c = 0; c < c0; c++) s[c * ld + r] = FA_MASK_VALUE;
        for (int64_t c = c1; c < cols; c++) s[c * ld + r] = FA_MASK_VALUE;
    }
}
