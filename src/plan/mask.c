/* SPDX-License-Identifier: BSD-3-Clause */
/* The masks' geometry (mask.h). Masks come from indices only: the library never builds an Nq x Nk
 * mask. */
#include "plan/mask.h"

fa_key_range fa_visible_keys(const fa_problem *p, int64_t row)
{
    /* The key on the row's diagonal: the causal mask ends there, windows are measured from it. Its
     * range, [-Nq, Nq + Nk] widened by |diagonal_shift| <= 2^52, and the comparisons below keep
     * every sum inside int64 for any window. */
    int64_t diag = fa_position_of(p, row) + p->diag_offset, begin = 0, end = p->kv_len;
    switch (p->causal) {
    case FA_CAUSAL_NONE: break;
    case FA_CAUSAL_TOP_LEFT:
    case FA_CAUSAL_BOTTOM_RIGHT: end = diag + 1; break; /* diag_offset says which diagonal */
    default:
        /* Never reached: validate.c refuses any other value and the drivers refuse problems whose
         * masks fa_masks_known() does not. Were it reached, the row would see no key (zeros,
         * lse = -inf), never a key that an unknown mask might hide. No assert here: a call in this
         * per-row helper would make every caller save its registers around it. */
        end = 0;
        break;
    }
    if (p->window_left >= 0 && p->window_left < diag) begin = diag - p->window_left;
    if (p->window_right >= 0 && p->window_right < end - diag - 1) end = diag + p->window_right + 1;
    fa_key_range r = {fa_clamp64(begin, 0, p->kv_len), fa_clamp64(end, 0, p->kv_len)};
    return r;
}

int fa_band_of(const fa_problem *p, fa_band *band)
{
    /* fa_visible_keys with diag = r + diag_offset: the left window hides keys below diag - left
     * (r <= c - diag_offset + left), the causal mask keys past diag (r >= c - diag_offset), a right
     * window without it keys past diag + right (r >= c - diag_offset - right); its clamps to
     * [0, Nk] hide no key in [0, Nk). A window wider than 2^60 bounds no row of a problem that fits
     * in memory and counts as none, so no sum below leaves int64 (|diag_offset| <= 2^53). */
    const int64_t wide = (int64_t)1 << 60;
    if (p->row_group > 1 || !fa_masks_known(p)) return 0;
    const int causal = p->causal != FA_CAUSAL_NONE;
    const int right_open = !causal && (p->window_right < 0 || p->window_right > wide);
    band->first = right_open ? FA_BAND_OPEN_BELOW : -(p->diag_offset + (causal ? 0 : p->window_right));
    band->last =
        p->window_left < 0 || p->window_left > wide ? FA_BAND_OPEN_ABOVE : p->window_left - p->diag_offset;
    return 1;
}

int64_t fa_row_key_span(const fa_problem *p)
{
    /* a row sees at most window_left keys before its diagonal key, the key, and window_right after
     * it (none after it under a causal mask) */
    int64_t before = p->window_left >= 0 ? p->window_left : p->kv_len;
    int64_t after = p->window_right >= 0 ? p->window_right : p->causal != FA_CAUSAL_NONE ? 0 : p->kv_len;
    if (before >= p->kv_len || after >= p->kv_len) return p->kv_len;
    int64_t width = before + after + 1;
    return width < p->kv_len ? width : p->kv_len;
}

int fa_masks_known(const fa_problem *p)
{
    fa_causal c = p->causal;
    return c == FA_CAUSAL_NONE || c == FA_CAUSAL_TOP_LEFT || c == FA_CAUSAL_BOTTOM_RIGHT;
}

int fa_tile_fully_visible(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols)
{
    /* ranges are monotone in the row: the first row has the smallest end, the last the largest begin */
    return fa_visible_keys(p, row0).end >= col0 + cols && fa_visible_keys(p, row0 + rows - 1).begin <= col0;
}

fa_key_blocks fa_key_blocks_seen(const fa_problem *p, int64_t row0, int64_t rows, int64_t block_k)
{
    int64_t b = fa_visible_keys(p, row0).begin, e = fa_visible_keys(p, row0 + rows - 1).end;
    int64_t blocks = (p->kv_len + block_k - 1) / block_k;
    fa_key_blocks met = {fa_clamp64(b, 0, p->kv_len) / block_k,
                         (fa_clamp64(e, 0, p->kv_len) + block_k - 1) / block_k};
    if (met.first > blocks) met.first = blocks;
    if (met.end < met.first || e <= b) met.end = met.first;
    return met;
}

fa_key_range fa_tile_cols_seen(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols)
{
    fa_key_range seen = {fa_clamp64(fa_visible_keys(p, row0).begin - col0, 0, cols),
                         fa_clamp64(fa_visible_keys(p, row0 + rows - 1).end - col0, 0, cols)};
    if (seen.end < seen.begin) seen.end = seen.begin;
    return seen;
}
